# Session 45, call h: LayerNorm's whole rows (49152-65536) on 8-warp consumers (exp_ln_warps.py).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/exp_ln_warps.py $OUT/w > $OUT/w/exp-ln-warps.log 2>&1
tail -5 $OUT/w/exp-ln-warps.log
tar czf $OUT/call-h.tgz -C $OUT w
