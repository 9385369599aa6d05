# Session 48: the row reductions' wide rows in pieces a program each, one launch (reductions.py's "pieces" path, new):
# the reductions' GPU tests, the experiment (pieces of 16384 / 8192 / 32768 against the kernels they replace), and the
# results rows from 32768.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 12 tests/test_reductions.py -p no:logging --tb=line 2>&1 | grep -v Warn \
  | tail -15 | tee $OUT/w/tests.log
timeout 200 python benchmarks/exp_reduce_pieces.py $OUT/w > $OUT/w/exp-reduce-pieces.log 2>&1
tail -14 $OUT/w/exp-reduce-pieces.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families reductions --ops row_sum,row_max,row_mean,row_norm \
  --widths 32768,65536,131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log | head -20
tar czf $OUT/call-e.tgz -C $OUT w
