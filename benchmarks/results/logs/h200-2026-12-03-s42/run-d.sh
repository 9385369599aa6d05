# session 42, call d: the tests marked slow (large sizes, the tuner's), verbose: call c's whole-suite run stopped at
# its limit with 12 tests in flight (the slowest), unnamed by -q.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/run-d.tgz -C $OUT w; }
timeout -s INT 370 python -m pytest -v -p no:cacheprovider -n 12 --timeout 300 -rfE -m slow tests/ > $W/slow.txt 2>&1
echo "slow rc $?: $(tail -1 $W/slow.txt)"; grep -E "^(FAILED|ERROR)" $W/slow.txt | cut -c1-240; pack
