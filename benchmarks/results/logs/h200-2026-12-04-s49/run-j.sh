# Session 49, call j: LayerNorm in parts of 16384 with both parameters kept (exp_ln_keep_one.py, its p16k variants).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_ln_keep_one.py $OUT/w > $OUT/w/exp-ln-keep-one.log 2>&1
tail -6 $OUT/w/exp-ln-keep-one.log
