# session 25, call 1: the unfenced close on the GPU (test, then the kept M = 1 candidate fenced vs unfenced)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
C='(128, 4, 4, 7, 1, 72, 4, True, True)'
mkdir -p $OUT/tests
timeout 110 python -m pytest tests/test_quant_matmul.py -q -k unfenced -p no:cacheprovider -rf > $OUT/tests/unfenced.txt 2>&1
tail -1 $OUT/tests/unfenced.txt; grep -E "^(FAILED|E )" $OUT/tests/unfenced.txt | head -8 | cut -c1-200
timeout 170 python benchmarks/exp_gemv_tail.py $OUT --config "$C" > $OUT/tail-library.log 2>&1; echo "rc $?"
timeout 170 python benchmarks/exp_gemv_tail.py $OUT --config "$C" --unfenced > $OUT/tail-unfenced.log 2>&1; echo "rc $?"
paste -d" " <(grep ^int $OUT/tail-library.log | cut -c1-60) <(grep ^int $OUT/tail-unfenced.log | cut -c27-60)
tail -3 $OUT/tail-unfenced.log | cut -c1-200
