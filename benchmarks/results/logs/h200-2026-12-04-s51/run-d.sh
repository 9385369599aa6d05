# Session 51, call d: GPU tests of the changed harness and plans (test_bench, test_plans, test_matmul,
# test_quant_matmul, test_attention), then the matmul results rows at M = 512 with the providers' graphs timed in
# alternating bursts (sweep.measure now), rooftop and cuBLAS, tuned from an empty cache.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 280 python -m pytest -q -n 14 tests/test_bench.py tests/test_plans.py tests/test_matmul.py \
  tests/test_quant_matmul.py tests/test_attention.py -p no:logging --tb=line 2>&1 | grep -v Warn > $OUT/w/gpu-tests.txt
tail -8 $OUT/w/gpu-tests.txt
timeout 280 python benchmarks/gpu_session.py $OUT/w/session --families matmul --ops matmul --leading 512 \
  --providers rooftop,cublas --no-ncu 2>&1 | grep -v Warn > $OUT/w/session-matmul.log
tail -14 $OUT/w/session-matmul.log
tar czf $OUT/call-d.tgz -C $OUT w
