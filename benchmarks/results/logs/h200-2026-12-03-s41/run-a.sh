# session 41, call a: the reductions' chunks path (a row's 32 KB chunks as programs, the row's last one combining).
# 1. GPU tests of test_reductions.py; 2. exp_reduce_wide.py: chunks by bytes / warps against the on-chip and looped
# paths at 32768-262144; 3. results rows of sum / max / mean / norm at those widths with the library's defaults.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=$OUT/w; mkdir -p $W/red $W/session
pack() { tar czf $OUT/run-a.tgz -C $OUT w; }
timeout -s INT 150 python -m pytest -v -p no:cacheprovider -n 12 --timeout 120 -rfE tests/test_reductions.py \
    > $W/tests.txt 2>&1
echo "tests rc $?: $(tail -1 $W/tests.txt)"; grep -E "^(FAILED|ERROR)" $W/tests.txt | cut -c1-200; pack
timeout 330 python benchmarks/exp_reduce_wide.py $W/red > $W/red/log.txt 2>&1; echo "red rc $?"
tail -14 $W/red/log.txt; pack
timeout 240 python benchmarks/gpu_session.py $W/session --families reductions --no-ncu \
    --ops row_sum,row_max,row_mean,row_norm --widths 32768,65536,131072,262144 > $W/session/log.txt 2>&1
echo "session rc $?"; grep -E "^row_" $W/session/log.txt | cut -c1-100; pack
