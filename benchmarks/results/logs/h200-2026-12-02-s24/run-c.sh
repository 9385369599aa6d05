# session 24, call 3: the GEMV's GPU tests with the kept AHEAD candidate (x_asm / slices with AHEAD 2, plan reuse,
# the mma GEMV), then every candidate at M = 1 and 4
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 260 python -m pytest tests/test_quant_matmul.py -q -k "x_asm or slices or plan_reuse or mma_gemv" -p no:cacheprovider -rf > $OUT/tests/gemv.txt 2>&1
tail -1 $OUT/tests/gemv.txt; grep "^FAILED" $OUT/tests/gemv.txt | head -5
timeout 150 python -m pytest -q "tests/test_quant_matmul.py::test_every_candidate_gpu[1]" "tests/test_quant_matmul.py::test_every_candidate_gpu[4]" -p no:cacheprovider -rf > $OUT/tests/every.txt 2>&1
tail -1 $OUT/tests/every.txt; grep "^FAILED" $OUT/tests/every.txt | head -5
