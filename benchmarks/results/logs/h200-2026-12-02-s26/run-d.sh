# session 26, call 4: the chain test again (conftest had turned tuning off), then the int4 results rows
# at batch 1 and 16 with PDL on (gemv, mma, dot) and the chain's choices (tuned from an empty cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest tests/test_quant_matmul.py -q -p no:cacheprovider -rf -k "tuned_in_a_chain or cold_copies" \
  > $OUT/tests/chain.txt 2>&1
tail -1 $OUT/tests/chain.txt; grep -E "^(FAILED|E )" $OUT/tests/chain.txt | head -8 | cut -c1-200
timeout 260 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int4 --leading 1,16 --no-ncu \
  > $OUT/session-quant-int4.log 2>&1; echo "rc $?"
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150
tail -2 $OUT/session-quant-int4.log | cut -c1-150
tar czf $OUT/tuner-cache-int4.tgz -C /tmp/cache .
# then, in what device time is left, end-to-end decode under CUDA graphs (session 6: stock 449, patched 547, + int4
# 614 tok/s; 8 layers of Llama-3-8B's shapes, batch 1, 128-token prompt, 64 new tokens)
timeout 150 python benchmarks/e2e_decode.py $OUT/e2e-graphs.json --graphs > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -5 $OUT/e2e-graphs.log | cut -c1-150
