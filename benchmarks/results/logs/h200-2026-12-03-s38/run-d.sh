# session 38, call d (~4 minutes): the GPU tests of the final code (LayerNorm's Welford kernel to 40960 with w and b
# past L1 from 24576; the split paths removed), then as much of the whole suite as the time leaves.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/tests
timeout -s INT 100 python -m pytest -v -p no:cacheprovider -n 12 --timeout 90 -rfE tests/test_layer_norm.py \
    tests/test_rms_norm.py tests/test_softmax.py > $W/tests/norms.txt 2>&1
echo "norm tests rc $?: $(tail -1 $W/tests/norms.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/norms.txt | cut -c1-200
gzip -c $W/tests/norms.txt > $OUT/norms.txt.gz
timeout -s INT 90 python -m pytest -v -p no:cacheprovider -n 12 --timeout 80 -rfE tests/ \
    --ignore tests/test_layer_norm.py --ignore tests/test_rms_norm.py --ignore tests/test_softmax.py \
    > $W/tests/rest.txt 2>&1
echo "rest rc $?: $(tail -1 $W/tests/rest.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/rest.txt | cut -c1-200 | head
gzip -c $W/tests/rest.txt > $OUT/rest.txt.gz; rm -rf $W
