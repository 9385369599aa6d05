# session 41, call d: the GEMM's direct variants (128 x 192 over 5 stages, 128 x 160 over 6: the epilogue stores from
# registers, the staging buffers' shared memory goes to the ring). 1. GPU tests of the Gluon GEMM; 2. the flushes
# probe with the 5-stage variant; 3. the matmul results rows at M = 512, tuned from an empty cache.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/session
pack() { tar czf $OUT/run-d.tgz -C $OUT w; }
timeout -s INT 220 python -m pytest -v -p no:cacheprovider -n 8 --timeout 200 -rfE tests/test_matmul.py -k gluon \
    > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
timeout 120 python benchmarks/probe_gemm_ncu.py $W --flushes > $W/flushes.txt 2>&1; echo "flushes rc $?"
grep -v Warning $W/flushes.txt | tail -7; pack
timeout 300 python benchmarks/gpu_session.py $W/session --families matmul --ops matmul --no-ncu --leading 512 \
    > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^matmul" $W/session/log.txt | cut -c1-150; pack
