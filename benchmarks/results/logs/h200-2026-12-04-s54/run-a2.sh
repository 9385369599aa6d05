# Prepared in session 54, after run-a1.sh passed: the rest of the GPU suite (row ops, decode attention, RoPE, the
# harness, the report, the integrations), ~4 min.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 300 python -m pytest -q -n 14 --timeout 200 -p no:logging --tb=line --durations=15 tests \
  --deselect tests/test_plans.py --deselect tests/test_compile.py --deselect tests/test_matmul.py \
  --deselect tests/test_quant_matmul.py --deselect tests/test_attention.py 2>&1 | grep -v Warn \
  > $OUT/w/gpu-tests-a2.txt
tail -25 $OUT/w/gpu-tests-a2.txt
tar czf $OUT/call-a2.tgz -C $OUT w
