# Session 50, call f: the GEMM test files with the final code (matmul's PDL off by default, quant_matmul's Gluon paths
# launched as programmatic dependents), with test_compile, test_plans and test_integrations.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 330 python -m pytest -q -n 14 tests/test_matmul.py tests/test_quant_matmul.py tests/test_compile.py \
  tests/test_plans.py tests/test_integrations.py -p no:logging --tb=line 2>&1 | grep -v Warn | tail -25 \
  > $OUT/w/tests-gemm.log
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/w/tests-gemm.log | tail -12
tar czf $OUT/call-f.tgz -C $OUT w
