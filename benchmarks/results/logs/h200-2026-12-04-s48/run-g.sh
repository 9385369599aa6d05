# Session 48: the reductions' pieces wired past 65536 (reductions.PIECE_CONFIGS: sum / sum of squares 16384 over 16
# warps, max 32768 over 8): the reductions' GPU tests, the experiment against the old kernels, the results rows.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 12 tests/test_reductions.py -p no:logging --tb=line 2>&1 | grep -v Warn \
  | tail -6 | tee $OUT/w/tests.log
timeout 150 python benchmarks/exp_reduce_pieces.py $OUT/w > $OUT/w/exp-reduce-pieces.log 2>&1
tail -10 $OUT/w/exp-reduce-pieces.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families reductions --ops row_sum,row_max,row_mean,row_norm \
  --widths 65536,131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log | head -20
tar czf $OUT/call-g.tgz -C $OUT w
