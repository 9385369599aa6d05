# session 26, call 3: the tuner's chain (M <= 16 timed over cold copies of the weight) tested, then the int8 results
# rows with PDL on and the chain's choices (tuned from an empty cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest tests/test_quant_matmul.py -q -p no:cacheprovider -rf -k "tuned_in_a_chain or cold_copies" \
  > $OUT/tests/chain.txt 2>&1
tail -1 $OUT/tests/chain.txt; grep -E "^(FAILED|E )" $OUT/tests/chain.txt | head -8 | cut -c1-200
timeout 470 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int8 --no-ncu \
  > $OUT/session-quant-int8.log 2>&1; echo "rc $?"
grep "graph" $OUT/session-quant-int8.log | sed -E 's/ +\|.*//' | cut -c1-150
tail -2 $OUT/session-quant-int8.log | cut -c1-150
tar czf $OUT/tuner-cache-int8.tgz -C /tmp/cache .
