# session 27, call 3: the row ops' decode kernels launched as programmatic dependents (_support.ROW_PDL): GPU tests
# (the new chain test in test_plans, the row ops' suites, quant_matmul's PDL chain after the helper moved to _support),
# then end-to-end decode under CUDA graphs with gate / up apart and the row kernels' PDL off as rows of their own
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest tests/test_plans.py tests/test_rope.py tests/test_activations.py tests/test_quant_matmul.py \
  -q -p no:cacheprovider -rf -m "not slow" -k "not test_quant_matmul.py or pdl" > $OUT/tests/rows-pdl.txt 2>&1
tail -1 $OUT/tests/rows-pdl.txt; grep -E "^(FAILED|E )" $OUT/tests/rows-pdl.txt | head -8 | cut -c1-200
timeout 150 python -m pytest tests/test_rms_norm.py -q -p no:cacheprovider -rf -m "not slow" -x > $OUT/tests/rms.txt 2>&1
tail -1 $OUT/tests/rms.txt; grep -E "^(FAILED|E )" $OUT/tests/rms.txt | head -8 | cut -c1-200
timeout 330 python benchmarks/e2e_decode.py $OUT --graphs --row-pdl-ab > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
