# session 27, call 3: end-to-end decode under CUDA graphs (patch_model now also fuses the residual add into the
# norm and stacks q / k / v; the row ops' decode kernels launch as programmatic dependents, _support.ROW_PDL), with
# the projections apart and the row kernels' PDL off as rows of their own (call 1's tuner cache first); then GPU
# tests: test_plans' row-op PDL chain, the row ops' suites, quant_matmul's PDL chain (its helper moved to _support),
# the integrations (the rewritten forwards)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s27/call-a/tuner-cache-int4.tgz -C /tmp/cache
timeout 360 python benchmarks/e2e_decode.py $OUT --graphs --row-pdl-ab > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
timeout 110 python -m pytest tests/test_plans.py tests/test_rope.py tests/test_activations.py tests/test_integrations.py \
  tests/test_quant_matmul.py -q -p no:cacheprovider -rf -m "not slow" -k "not test_quant_matmul.py or pdl" \
  > $OUT/tests/rows-pdl.txt 2>&1
tail -1 $OUT/tests/rows-pdl.txt; grep -E "^(FAILED|E )" $OUT/tests/rows-pdl.txt | head -8 | cut -c1-200
timeout 90 python -m pytest tests/test_rms_norm.py -q -p no:cacheprovider -rf -m "not slow" -x > $OUT/tests/rms.txt 2>&1
tail -1 $OUT/tests/rms.txt; grep -E "^(FAILED|E )" $OUT/tests/rms.txt | head -8 | cut -c1-200
