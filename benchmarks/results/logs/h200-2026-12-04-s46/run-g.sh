# Session 46, call g: the whole GPU suite (slow tests too) on the session's final library code (swap_pairs in the
# softmax and norm parts; quantizing rows without a residual in parts past 57344), the rms_norm dispatch test first
# (call f's one failure: the test's expectation, fixed); the rms_norm_fp8 results row at 131072 again (call f: 69.4% by
# do_bench against 86.9% by graph replay).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q tests/test_rms_norm.py -k "dispatch" -p no:logging 2>&1 | tail -3 | tee $OUT/w/tests-rms.log
timeout 60 python benchmarks/gpu_session.py $OUT/w/session-rms --families rms_norm --ops rms_norm_fp8 \
  --widths 131072 --no-ncu > $OUT/w/session-rms.log 2>&1; grep -E "GB/s" $OUT/w/session-rms.log
timeout 420 python -m pytest -q -n 12 tests -p no:logging --durations=15 2>&1 | tail -40 > $OUT/w/tests-all.log
grep -E "passed|failed|FAILED|ERROR" $OUT/w/tests-all.log | tail -15
tar czf $OUT/call-g.tgz -C $OUT w
