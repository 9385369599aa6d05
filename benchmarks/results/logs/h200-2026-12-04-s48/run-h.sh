# Session 48, call h: the whole GPU suite (slow tests too) on the session's final library code (the reductions'
# pieces past 65536; session 47's merges, whose changed paths and callers passed then).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 500 python -m pytest -q -n 14 tests -p no:logging --tb=line --durations=10 2>&1 | grep -v Warn \
  | tail -45 > $OUT/w/tests-all.log
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/w/tests-all.log | tail -20
tar czf $OUT/call-h.tgz -C $OUT w
