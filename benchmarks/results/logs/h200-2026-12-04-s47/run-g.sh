# Session 47: do_bench's spread for the rows in parts (benchmarks/exp_bench_spread.py).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/exp_bench_spread.py $OUT/w > $OUT/w/exp-bench-spread.log 2>&1
tail -9 $OUT/w/exp-bench-spread.log
tar czf $OUT/call-g.tgz -C $OUT w
