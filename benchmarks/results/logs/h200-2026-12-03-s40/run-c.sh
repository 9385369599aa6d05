# session 40, call c: the looped reductions at 16 KB tiles over 16 warps (wired after call b): 1. GPU tests of
# test_reductions.py and test_plans.py; 2. the launch sweep again around it (and argmax's split path at decode sizes);
# 3. results rows of the reductions family at every width.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/red $W/session
pack() { tar czf $OUT/run-c.tgz -C $OUT w; }
timeout -s INT 100 python -m pytest -v -p no:cacheprovider -n 12 --timeout 80 -rfE tests/test_reductions.py \
    tests/test_plans.py > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
timeout 150 python benchmarks/exp_reduce_wide.py $W/red > $W/red/log.txt 2>&1; echo "red rc $?"
tail -11 $W/red/log.txt; pack
timeout 240 python benchmarks/gpu_session.py $W/session --families reductions --no-ncu > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^row_" $W/session/log.txt | grep -E "131072|262144|x128256" | cut -c1-100; pack
