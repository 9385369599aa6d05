# session 37, call c: 1. GPU tests of softmax (the reload kernel's interpreter-size test now with a row per SM) and
# layer_norm (the Welford kernel's wide rows, wired from call b); 2. layer_norm at 24576 / 32768: the library (wide
# Welford) against Gluon; 3. the results rows at 32768 of softmax, log_softmax and layer_norm re-measured (call b's
# session files did not come back: at most 8 files do, so everything is in one archive here).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/tests $W/session
timeout -s INT 240 python -m pytest -v -p no:cacheprovider -n 12 --timeout 200 -rfE tests/test_softmax.py \
    tests/test_layer_norm.py > $W/tests/softmax-layer-norm.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests/softmax-layer-norm.txt)"
grep -h -E "^(FAILED|ERROR)" $W/tests/*.txt | cut -c1-200 | head -20
timeout 100 python benchmarks/exp_norm_reload.py $W --ops layer_norm --widths 24576,32768 > $W/exp-ln.log 2>&1
echo "layer_norm experiment rc $?"; sed -n '/^copy/,$p' $W/exp-ln.log
timeout 150 python benchmarks/gpu_session.py $W/session --families softmax,layer_norm \
    --ops softmax,log_softmax,layer_norm --widths 32768 --no-ncu > $W/session/log.txt 2>&1
echo "session rc $?"; tail -6 $W/session/log.txt
tar czf $OUT/call-c.tgz -C $OUT w && rm -rf $W
