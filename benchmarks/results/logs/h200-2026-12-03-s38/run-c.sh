# session 38, call c (~5 minutes): NOTES item 248, the split reload kernels with an exchange that keeps L1 (relaxed
# atomics); the results rows with the predicted winners set (gpu_session.py --set; kept only if the experiment
# agrees); the GPU tests of the norms and softmax (LayerNorm's w and b past L1 wired at 24576 < N <= 40960).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/split $W/session-ln $W/session-rows $W/tests
timeout 120 python benchmarks/exp_reload_one_program.py $W/split \
    --ops softmax_split,rms_norm_split,add_rms_norm_split,layer_norm_split --widths 65536,131072,262144 \
    > $W/split/log.txt 2>&1; echo "split experiment rc $?"; sed -n '/^copy/,$p' $W/split/log.txt
SET="--set layer_norm.WELFORD_SPLIT_CHUNK=32768 --set softmax.RELOAD_SPLIT_BYTES=65536 --set rms_norm.RELOAD_SPLIT_N=32768"
timeout 80 python benchmarks/gpu_session.py $W/session-ln --families layer_norm --ops layer_norm \
    --widths 65536,131072,262144 --no-ncu $SET > $W/session-ln/log.txt 2>&1; echo "session ln rc $?"
grep -E "^set|^layer_norm " $W/session-ln/log.txt | tail -8
timeout 120 python benchmarks/gpu_session.py $W/session-rows --families softmax,rms_norm \
    --ops softmax,log_softmax,rms_norm,add_rms_norm --widths 65536,131072,262144 --no-ncu $SET \
    > $W/session-rows/log.txt 2>&1; echo "session rows rc $?"; grep -E "^(log_)?softmax |^(add_)?rms_norm " $W/session-rows/log.txt
timeout -s INT 130 python -m pytest -v -p no:cacheprovider -n 12 --timeout 100 -rfE tests/test_rms_norm.py \
    tests/test_layer_norm.py tests/test_softmax.py -k "gpu or reload or welford or split" > $W/tests/norms.txt 2>&1
echo "norm tests rc $?: $(tail -1 $W/tests/norms.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/norms.txt | cut -c1-200
tar czf $OUT/run-c.tgz -C $OUT w && rm -rf $W
