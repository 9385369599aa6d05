# Session 50, call a: the whole GPU suite (slow tests too) on session 49's final code (LayerNorm's RESIDENT_ONE).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 540 python -m pytest -q -n 14 tests -p no:logging --tb=line --durations=10 2>&1 | grep -v Warn \
  | tail -45 > $OUT/w/tests-all.log
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/w/tests-all.log | tail -20
tar czf $OUT/call-a.tgz -C $OUT w
