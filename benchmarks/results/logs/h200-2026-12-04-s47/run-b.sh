# Session 47: LayerNorm's parts of 32768 (layer_norm.PART_MAX_N): its GPU tests and results rows at 131072 / 262144
# (76.7 / 74.8% in parts of 65536 before); the last round of rows (benchmarks/exp_row_tail.py: the library at M0 and at
# whole rounds of 2 x SMs rows around it), and add_layer_norm's residual parts at 524288 by part width.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 12 tests/test_layer_norm.py -p no:logging 2>&1 | tail -4 | tee $OUT/w/tests.log
timeout 120 python benchmarks/gpu_session.py $OUT/w/session --families layer_norm --ops layer_norm \
  --widths 131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log
timeout 240 python benchmarks/exp_row_tail.py $OUT/w > $OUT/w/exp-row-tail.log 2>&1; tail -18 $OUT/w/exp-row-tail.log
tar czf $OUT/call-b.tgz -C $OUT w
