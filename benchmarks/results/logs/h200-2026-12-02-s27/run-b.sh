# session 27, call 2: the Hugging Face integration's GPU tests (stacked gate / up), then end-to-end decode under
# CUDA graphs (session 6: stock 449, patched 547, + int4 614 tok/s; 8 layers of Llama-3-8B, batch 1)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests; ls /tmp/cache 2>/dev/null | head -3  # call 1's tuner cache, if this machine is still the same
timeout 150 python -m pytest tests/test_integrations.py tests/test_nn.py -q -p no:cacheprovider -rf \
  > $OUT/tests/integrations.txt 2>&1
tail -1 $OUT/tests/integrations.txt; grep -E "^(FAILED|E )" $OUT/tests/integrations.txt | head -8 | cut -c1-200
timeout 300 python benchmarks/e2e_decode.py $OUT/e2e-graphs.json --graphs > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
