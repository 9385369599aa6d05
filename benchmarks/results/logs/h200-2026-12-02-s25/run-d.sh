# session 25, call 4 (the last ~4 minutes): the int4 GEMV launched as a programmatic dependent and / or its words
# prefetched into L2 (exp_gemv_pdl.py), the kept M = 1 candidate at the benchmark shapes
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 150 python benchmarks/exp_gemv_pdl.py $OUT > $OUT/exp-gemv-pdl-int4.log 2>&1; echo "rc $?"
grep -E "^int|Error|error" $OUT/exp-gemv-pdl-int4.log | cut -c1-150 | head -30
