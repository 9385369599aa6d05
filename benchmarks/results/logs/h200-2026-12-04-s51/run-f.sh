# Session 51, call f: the whole GPU suite on this session's code (clear_plans reaching every plans table, the
# alternating harness).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 515 python -m pytest -q -n 14 tests -p no:logging --tb=line --durations=10 2>&1 | grep -v Warn \
  > $OUT/w/gpu-tests-all.txt
tail -25 $OUT/w/gpu-tests-all.txt
tar czf $OUT/call-f.tgz -C $OUT w
