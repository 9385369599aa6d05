# Session 47: the GPU tests that call d failed on their own expectations (parts from PART_MAX_N now), and bias_gelu's
# column blocks (benchmarks/exp_bias_gelu.py: activations.BIAS_BLOCK_N 4096 / 2048 / 1024 / 512).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 12 tests/test_split_rows.py tests/test_rms_norm.py -k "parts or split" \
  -p no:logging 2>&1 | grep -E "passed|failed|FAILED|Error" | tail -12 | tee $OUT/w/tests.log
timeout 200 python benchmarks/exp_bias_gelu.py $OUT/w > $OUT/w/exp-bias-gelu.log 2>&1; tail -7 $OUT/w/exp-bias-gelu.log
tar czf $OUT/call-e.tgz -C $OUT w
