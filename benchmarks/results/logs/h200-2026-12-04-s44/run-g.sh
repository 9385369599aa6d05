# Session 44, call g: the reduce-overhead test that failed in call f (and, run alone, on sessions 42's and 43's code
# too: the split-K path's lru-cached float32 placeholder made first in a CUDA-graph tree's warm-up, in its pool), with
# the placeholder from the driver; alone, then test_compile and the quant_matmul split / graph tests.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache-g PYTHONPATH=$PWD/src:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -x tests/test_compile.py -k "reduce_overhead_graphs" -p no:logging --tb=line 2>&1 \
  | grep -E "passed|failed|^E " | tee $OUT/w/test-alone.log
timeout 150 python -m pytest -q -n 8 tests/test_compile.py tests/test_plans.py tests/test_quant_matmul.py \
  -k "compile or graph or split or plan or counters or mma or gemv" -p no:logging 2>&1 | tail -3 | tee $OUT/w/tests.log
