# Session 48: the row reductions' wide rows streamed through a TMA ring (ops/reductions_sm90.py, new): the reductions'
# GPU tests, the experiment (library / Triton paths / 8 consumer warps at 16384-262144) and the results rows from 32768.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 12 tests/test_reductions.py -p no:logging 2>&1 | tail -15 | tee $OUT/w/tests.log
timeout 200 python benchmarks/exp_reductions_gluon.py $OUT/w > $OUT/w/exp-reductions-gluon.log 2>&1
tail -18 $OUT/w/exp-reductions-gluon.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families reductions --ops row_sum,row_max,row_mean,row_norm \
  --widths 32768,65536,131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log | head -40
tar czf $OUT/call-a.tgz -C $OUT w
