# Session 46, call j: log_softmax in parts of 32768 too (softmax.PART_MAX_N; call i): the softmax GPU tests and
# test_split_rows, then the log_softmax results rows at 131072 / 262144.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 90 python -m pytest -q -n 10 tests/test_softmax.py tests/test_split_rows.py -p no:logging 2>&1 | tail -3 \
  | tee $OUT/w/tests-softmax.log
timeout 60 python benchmarks/gpu_session.py $OUT/w/session-sm --families softmax --ops log_softmax \
  --widths 131072,262144 --no-ncu > $OUT/w/session-sm.log 2>&1; grep -E "GB/s" $OUT/w/session-sm.log
tar czf $OUT/call-j.tgz -C $OUT w
