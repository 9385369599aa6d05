# session 42, call a: the arrival counters asked for inside a CUDA-graph capture made and zeroed on a side stream
# with this thread's capture mode relaxed (NOTES item 272); outgrown counters kept. GPU tests of every capture,
# graph, PDL-chain, counters and split path; torch.compile(mode="reduce-overhead") over a split-K GEMV.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/run-a.tgz -C $OUT w; }
timeout -s INT 150 python -m pytest -q -p no:cacheprovider -n 4 --timeout 120 -rfE tests/test_plans.py \
    tests/test_compile.py > $W/tests-plans-compile.txt 2>&1
echo "plans+compile rc $?: $(tail -1 $W/tests-plans-compile.txt)"; grep -E "^(FAILED|ERROR)" $W/tests-plans-compile.txt | cut -c1-240; pack
timeout -s INT 280 python -m pytest -q -p no:cacheprovider -n 12 --timeout 200 -rfE tests/test_split_rows.py \
    tests/test_quant_matmul.py tests/test_decode_attention.py tests/test_softmax.py tests/test_layer_norm.py \
    tests/test_rms_norm.py tests/test_rope.py tests/test_matmul.py \
    -k "counters or capture or graph or pdl or split or parts or many_rows or streamk or stream_k" > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-240; pack
