# Session 48: quantizing RMSNorm rows without a residual on the reload kernel (rms_norm.RELOAD_QUANT_MIN_N / MAX_N,
# 4096 < N <= 65536): the rms_norm GPU tests, the experiment against the Gluon path, the results rows.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 12 tests/test_rms_norm.py -p no:logging --tb=line 2>&1 | grep -v Warn \
  | tail -25 | tee $OUT/w/tests.log
timeout 150 python benchmarks/exp_quant_reload.py $OUT/w > $OUT/w/exp-quant-reload.log 2>&1
tail -8 $OUT/w/exp-quant-reload.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm --ops rms_norm_fp8 \
  --widths 4096,8192,16384,32768,65536 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log | head -20
tar czf $OUT/call-c.tgz -C $OUT w
