# Session 47 (branch split-swap; session 46 run-k): the Triton split kernels' statistics in one round trip
# (_support.swap_row_stats / leave_row in place of exchange_row_stats; softmax_sm90.swap_pairs shares pair_word):
# the split-rows, norm, softmax and plans GPU tests, then the results rows of add_rms_norm / add_layer_norm at 131072 /
# 262144 (the split-words kernels; 90.0 / 88.6% and 84.2 / 83.7% in the results before); LayerNorm's parts again;
# softmax's parts on a ring of smaller chunks.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 240 python -m pytest -q -n 12 tests/test_split_rows.py tests/test_rms_norm.py tests/test_layer_norm.py \
  tests/test_softmax.py tests/test_plans.py tests/test_compile.py -p no:logging 2>&1 | tail -6 | tee $OUT/w/tests.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm,layer_norm \
  --ops add_rms_norm,add_layer_norm --widths 131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log
# LayerNorm in parts of 32768 under the one-round-trip exchange (call c measured them under the old one: 77.2 / 76.2
# against parts of 65536 78.9 / 77.1; softmax's parts of 32768 gained 6-7 points from the exchange)
timeout 120 python benchmarks/exp_ln_warps.py $OUT/w --wide > $OUT/w/exp-ln-warps.log 2>&1; tail -6 $OUT/w/exp-ln-warps.log
# softmax's parts on rings of 26 4096-element chunks (exp_softmax_part_warps.py --chunks)
timeout 120 python benchmarks/exp_softmax_part_warps.py $OUT/w/chunks --chunks > $OUT/w/exp-chunks.log 2>&1
tail -6 $OUT/w/exp-chunks.log
tar czf $OUT/call-a.tgz -C $OUT w
