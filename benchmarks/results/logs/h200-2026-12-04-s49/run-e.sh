# Session 49, call e: do the row ops lose at 65536 to their rows' power-of-two stride (exp_row_stride.py)?
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 240 python benchmarks/exp_row_stride.py $OUT/w > $OUT/w/exp-row-stride.log 2>&1
tail -12 $OUT/w/exp-row-stride.log
tar czf $OUT/call-e.tgz -C $OUT w
