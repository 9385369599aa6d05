# Session 48: the decode-size table of add_rms_norm (results' decode_us: graph replay and from Python at M in {1, 8, 64},
# N in {4096, 8192}) was last measured in session 17, before the row kernels launched as programmatic dependents
# (session 28, _support.ROW_PDL); 64 x 8192 read 2.70 us against torch.compile's 2.63 then (the issue: no more than
# compile's). Re-measured with the library of now, with ROW_PDL off beside it.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm --ops add_rms_norm --widths 8192 \
  --no-ncu > $OUT/w/session.log 2>&1
grep -E -A12 "decode|GB/s" $OUT/w/session.log | head -40
timeout 200 python benchmarks/gpu_session.py $OUT/w/session-nopdl --families rms_norm --ops add_rms_norm \
  --widths 8192 --no-ncu --set _support.ROW_PDL=False > $OUT/w/session-nopdl.log 2>&1
grep -E -A12 "decode" $OUT/w/session-nopdl.log | head -20
tar czf $OUT/call-d.tgz -C $OUT w
