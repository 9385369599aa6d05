# session 41, call e: the matmul results rows at M = 512 with the final code (the direct variants of call d
# removed), tuned from an empty cache; and the tests of the Gluon GEMM's plans once more.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/session
pack() { tar czf $OUT/run-e.tgz -C $OUT w; }
timeout 300 python benchmarks/gpu_session.py $W/session --families matmul --ops matmul --no-ncu --leading 512 \
    > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^matmul" $W/session/log.txt | cut -c1-150; pack
timeout -s INT 150 python -m pytest -q -p no:cacheprovider -n 8 --timeout 140 -rfE tests/test_matmul.py -k gluon \
    > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; pack
