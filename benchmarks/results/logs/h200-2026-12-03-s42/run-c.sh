# session 42, call c: the whole test suite on the GPU (slow and gpu tests included) with the arrival counters from
# the CUDA driver (NOTES item 272): every split path, graph and tuner capture asks for them.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/run-c.tgz -C $OUT w; }
timeout -s INT 460 python -m pytest -q -p no:cacheprovider -n 12 --timeout 240 -rfE tests/ > $W/all.txt 2>&1
echo "all rc $?: $(tail -1 $W/all.txt)"; grep -E "^(FAILED|ERROR)" $W/all.txt | cut -c1-240; pack
