# session 40, call a: LayerNorm's columns kernel (w and b in registers of persistent column-part programs) against
# the library at 32K-256K, with and without a residual; the wide row reductions by do_bench and graph replay; then
# session 39's run-j.sh steps 1-2 (the softmax GPU tests in full, the softmax / log_softmax results rows at 32768 and
# 65536). The archive is rewritten after each step (a step cut by the call's limit leaves the earlier ones).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/session $W/cols $W/red
pack() { tar czf $OUT/run-a.tgz -C $OUT w; }
timeout 190 python benchmarks/exp_ln_columns.py $W/cols > $W/cols/log.txt 2>&1; echo "cols rc $?"
tail -12 $W/cols/log.txt; pack
timeout 140 python benchmarks/exp_reduce_wide.py $W/red > $W/red/log.txt 2>&1; echo "red rc $?"
tail -8 $W/red/log.txt; pack
timeout -s INT 100 python -m pytest -v -p no:cacheprovider -n 12 --timeout 80 -rfE tests/test_softmax.py \
    > $W/softmax-tests.txt 2>&1
echo "softmax tests rc $?: $(tail -1 $W/softmax-tests.txt)"; grep -E "^(FAILED|ERROR)" $W/softmax-tests.txt | cut -c1-200
pack
timeout 130 python benchmarks/gpu_session.py $W/session --families softmax --ops softmax,log_softmax \
    --widths 32768,65536 --no-ncu > $W/session/log.txt 2>&1; echo "session rc $?"
grep -E "softmax " $W/session/log.txt | tail -8; pack
