# session 28, call 2: end-to-end decode under CUDA graphs with the models in order, reversed, in order again
# (--repeats 3: median of three), the row kernels' PDL off as a row of its own; session 27's int4 tuner cache first,
# this run's saved; then the fixed quantized compile test of test_rms_norm
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s27/call-a/tuner-cache-int4.tgz -C /tmp/cache
timeout 480 python benchmarks/e2e_decode.py $OUT --graphs --row-pdl-ab --repeats 3 > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
tar czf $OUT/tuner-cache-e2e.tgz -C /tmp/cache .
timeout 60 python -m pytest tests/test_rms_norm.py -q -p no:cacheprovider -rf -k "variants_compile or quantized_output" \
  > $OUT/tests/rms-quant.txt 2>&1; tail -1 $OUT/tests/rms-quant.txt
