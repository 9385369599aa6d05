# Session 45, call g: softmax's parts of 32768 on 8-warp consumers (softmax.EXP_PART_MAX_N, EXP_PART_WARPS; call f):
# GPU tests of softmax, the softmax / log_softmax results rows at 131072 and 262144.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_softmax.py -p no:logging 2>&1 | tail -3 | tee $OUT/w/tests-softmax.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families softmax --widths 131072,262144 --no-ncu \
  > $OUT/w/session-softmax.log 2>&1; grep -E "^(log_)?softmax .*GB/s" $OUT/w/session-softmax.log; tail -2 $OUT/w/session-softmax.log
tar czf $OUT/call-g.tgz -C $OUT w
