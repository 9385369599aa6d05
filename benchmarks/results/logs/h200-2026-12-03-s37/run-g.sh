# prepared in session 37 for the next session's first call (~8 minutes; one archive comes back):
# 1. GPU tests of rms_norm (the one-program reload kernel, item 238), softmax and layer_norm (pass 2 ahead, item 242);
# 2. exp_reload_one_program.py for layer_norm and softmax at 32K-64K (items 240, 242);
# 3. the rms_norm results row at 65536 (the one-program reload kernel; the file still says 87.3%);
# 4. the whole GPU suite with conftest's cuda_cache_returned (item 239: 26 out-of-memory failures before).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/tests $W/session
timeout -s INT 150 python -m pytest -v -p no:cacheprovider -n 12 --timeout 120 -rfE tests/test_rms_norm.py \
    tests/test_softmax.py tests/test_layer_norm.py -k "gpu or reload or welford" > $W/tests/norms.txt 2>&1
echo "norm tests rc $?: $(tail -1 $W/tests/norms.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/norms.txt | cut -c1-200
timeout 150 python benchmarks/exp_reload_one_program.py $W --ops layer_norm,softmax --widths 32768,40960,49152,65536 \
    > $W/exp-one-program.log 2>&1; echo "one-program experiment rc $?"; sed -n '/^copy/,$p' $W/exp-one-program.log
timeout 60 python benchmarks/gpu_session.py $W/session --families rms_norm --ops rms_norm --widths 65536 --no-ncu \
    > $W/session/log.txt 2>&1; echo "session rc $?"; tail -4 $W/session/log.txt
timeout -s INT 260 python -m pytest -v -p no:cacheprovider -n 12 --timeout 200 -rfE tests/ \
    --junitxml=$W/tests/junit.xml > $W/tests/all.txt 2>&1
echo "suite rc $?: $(tail -1 $W/tests/all.txt)"; grep -E "^(FAILED|ERROR)" $W/tests/all.txt | cut -c1-200 | head -30
tar czf $OUT/run-g.tgz -C $OUT w && rm -rf $W
