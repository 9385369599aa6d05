# session 36, call c: rms_norm / add_rms_norm at 32768 and 65536 with the reload kernel's pass 1 in one vector (and
# rows with a residual reloaded at 32768 < N <= 65536), for the results file; then the GPU tests of what changed
# (the reload kernel; call b's two stale attention tests) and call b's three OOMs (12 workers' memory) alone.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python benchmarks/gpu_session.py $OUT/results --families rms_norm --ops rms_norm,add_rms_norm \
    --widths 32768,65536 --no-ncu > $OUT/session-rms.log 2>&1; echo "rms session rc $?"
grep -a -E "^(add_)?rms_norm +[0-9]" $OUT/session-rms.log | sed -E 's/ +\|.*//' | cut -c1-140
rm -f $OUT/results/*.csv
timeout 100 python -m pytest -q -p no:cacheprovider -n 4 tests/test_rms_norm.py -k "reload or matches_reference or gpu" \
    > $OUT/tests/rms.txt 2>&1; echo "rms tests rc $?: $(tail -1 $OUT/tests/rms.txt)"
timeout 60 python -m pytest -q -p no:cacheprovider tests/test_attention.py -k "plans_follow or prepared_attention_runs" \
    > $OUT/tests/attention.txt 2>&1; echo "attention tests rc $?: $(tail -1 $OUT/tests/attention.txt)"
timeout 100 python -m pytest -q -p no:cacheprovider tests/test_matmul.py -k "gpu_large or past_2_31" \
    > $OUT/tests/matmul.txt 2>&1; echo "matmul tests rc $?: $(tail -1 $OUT/tests/matmul.txt)"
grep -h "^FAILED" $OUT/tests/*.txt | cut -c1-200
