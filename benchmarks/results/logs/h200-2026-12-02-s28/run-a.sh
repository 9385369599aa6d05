# session 28, call 1: the GPU tests session 27 left (its NOTES "Next" 1): quant_matmul's PDL chain, test_plans (the
# replayed_by_switch helper), test_integrations (the rewritten forwards under inductor), test_rms_norm's non-slow
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests /tmp/cache
timeout 200 python -m pytest tests/test_plans.py tests/test_integrations.py tests/test_quant_matmul.py -q \
  -p no:cacheprovider -rf -m "not slow" -k "not test_quant_matmul.py or pdl" > $OUT/tests/plans-integrations-pdl.txt 2>&1
tail -1 $OUT/tests/plans-integrations-pdl.txt; grep -E "^(FAILED|E )" $OUT/tests/plans-integrations-pdl.txt | head -8 | cut -c1-200
timeout 250 python -m pytest tests/test_rms_norm.py -q -p no:cacheprovider -rf -m "not slow" > $OUT/tests/rms.txt 2>&1
tail -1 $OUT/tests/rms.txt; grep -E "^(FAILED|E )" $OUT/tests/rms.txt | head -8 | cut -c1-200
