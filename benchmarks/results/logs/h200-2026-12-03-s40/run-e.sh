# session 40, call e (the final code): row_max's one NaN-keeping reduction but in on-chip programs of one row (65536:
# fmax and a NaN count), argmax at 8 KB tiles over 8 warps (its own):
# 1. GPU tests of test_reductions.py, test_plans.py, test_compile.py and test_integrations.py; 2. results rows of
# row_max and row_argmax at every width.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/session
pack() { tar czf $OUT/run-e.tgz -C $OUT w; }
timeout -s INT 200 python -m pytest -v -p no:cacheprovider -n 12 --timeout 150 -rfE tests/test_reductions.py \
    tests/test_plans.py tests/test_compile.py tests/test_integrations.py > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
timeout 150 python benchmarks/gpu_session.py $W/session --families reductions --ops row_max,row_argmax --no-ncu \
    > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^row_" $W/session/log.txt | cut -c1-110; pack
