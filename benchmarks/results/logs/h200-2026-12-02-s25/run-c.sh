# session 25, call 3: every M = 1 candidate on the GPU (the 16-warp one new), then the int8 results tuned from an
# empty cache with the fenced close only (the unfenced one removed) and the new candidate
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 90 python -m pytest "tests/test_quant_matmul.py::test_every_candidate_gpu[1]" -q -p no:cacheprovider -rf > $OUT/tests/every-candidate-m1.txt 2>&1
tail -1 $OUT/tests/every-candidate-m1.txt; grep -E "^(FAILED|E )" $OUT/tests/every-candidate-m1.txt | head -5 | cut -c1-200
timeout 450 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int8 --no-ncu > $OUT/session-quant-int8.log 2>&1; echo "rc $?"
grep "graph" $OUT/session-quant-int8.log | sed -E 's/ +\|.*//' | cut -c1-150
tail -2 $OUT/session-quant-int8.log | cut -c1-150
tar czf $OUT/tuner-cache-int8.tgz -C /tmp/cache .
