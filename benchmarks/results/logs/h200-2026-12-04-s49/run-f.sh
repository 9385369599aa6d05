# Session 49, call f: the whole GPU suite (slow tests too) on the session's final library code (rms_norm's quantizing
# rows without a residual on chip at 32 values a thread; the LayerNorm experiments reverted).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 540 python -m pytest -q -n 14 tests -p no:logging --tb=line --durations=10 2>&1 | grep -v Warn \
  | tail -45 > $OUT/w/tests-all.log
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/w/tests-all.log | tail -20
tar czf $OUT/call-f.tgz -C $OUT w
