# Session 49, call g: the SMs' read rate from L2 (exp_l2_read.py).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python benchmarks/exp_l2_read.py 2>&1 | tee $OUT/w/exp-l2-read.log
