# session 36, call d (did not run in session 36: too little device time left; ready for the next session):
# 1. rms_norm's GPU tests after item 231's test changes (the Gluon tests with the reload kernel off; the reload
#    kernel with a residual at its new widths, in place too);
# 2. item 232's experiments: softmax reloaded with each group's (max, sum) kept across the tiles, LayerNorm's Welford
#    kernel over 32 warps in 16 / 8 values a thread, against the library (Gluon) and torch.compile.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest -q -p no:cacheprovider -n 6 tests/test_rms_norm.py -k "gpu" \
    > $OUT/tests/rms.txt 2>&1; echo "rms tests rc $?: $(tail -1 $OUT/tests/rms.txt)"
grep -h "^FAILED" $OUT/tests/*.txt | cut -c1-200
timeout 200 python benchmarks/exp_reload_softmax.py $OUT --widths 24576,32768,49152,65536 > $OUT/exp-softmax.log 2>&1
echo "softmax experiment rc $?"; sed -n '/^copy/,$p' $OUT/exp-softmax.log
timeout 220 python benchmarks/exp_norm_reload.py $OUT --ops layer_norm,add_layer_norm --widths 16384,24576,32768,65536 \
    > $OUT/exp-ln.log 2>&1; echo "layer_norm experiment rc $?"; tail -12 $OUT/exp-ln.log
