# Session 49, call k: LayerNorm's whole rows of 24576-40960 on the Gluon kernel with its weight kept (exp_ln_keep_one.py
# --whole), and the 32768 results row with the Welford kernel's wide rows off.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 90 python benchmarks/exp_ln_keep_one.py $OUT/w --whole > $OUT/w/exp-ln-keep-one-whole.log 2>&1
tail -4 $OUT/w/exp-ln-keep-one-whole.log
timeout 90 python benchmarks/gpu_session.py $OUT/w/session-ln --families layer_norm --ops layer_norm --widths 32768 \
  --no-ncu --set layer_norm.WELFORD_WIDE_MAX_N=0 > $OUT/w/session-ln.log 2>&1
grep -E "GB/s" $OUT/w/session-ln.log | head -4
tar czf $OUT/call-k.tgz -C $OUT w
