# Session 49, call h: one of LayerNorm's parameters kept in shared memory where both do not fit (norm_sm90.RESIDENT_ONE):
# the Gluon norm GPU tests, exp_ln_keep_one.py, the layer_norm results rows past 65536.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 14 tests/test_layer_norm.py tests/test_rms_norm.py -k "gluon or resident or parts" \
  -p no:logging --tb=short 2>&1 | grep -v Warn | tail -25 | tee $OUT/w/tests.log
timeout 120 python benchmarks/exp_ln_keep_one.py $OUT/w > $OUT/w/exp-ln-keep-one.log 2>&1
tail -5 $OUT/w/exp-ln-keep-one.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session-ln --families layer_norm --ops layer_norm \
  --widths 131072,262144 --no-ncu > $OUT/w/session-ln.log 2>&1
grep -E "GB/s" $OUT/w/session-ln.log | head -8
tar czf $OUT/call-h.tgz -C $OUT w
