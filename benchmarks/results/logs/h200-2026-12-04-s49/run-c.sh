# Session 49, call c: what LayerNorm's wide rows lose to RMSNorm's (exp_ln_params.py: with and without weight and
# bias, beside rms_norm).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_ln_params.py $OUT/w > $OUT/w/exp-ln-params.log 2>&1
tail -6 $OUT/w/exp-ln-params.log
tar czf $OUT/call-c.tgz -C $OUT w
