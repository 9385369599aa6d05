# Session 47: the GPU tests of what this session changed and what calls the norms (compile, plans, models), and the
# norms' ring in 4096-element chunks where rows or parts overflow it (exp_norm_parts.py --chunks).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python benchmarks/exp_norm_parts.py $OUT/w --chunks > $OUT/w/exp-norm-chunks.log 2>&1
tail -7 $OUT/w/exp-norm-chunks.log
timeout 330 python -m pytest -q -n 12 tests/test_split_rows.py tests/test_rms_norm.py tests/test_layer_norm.py \
  tests/test_compile.py tests/test_plans.py tests/test_activations.py tests/test_integrations.py tests/test_nn.py \
  -p no:logging 2>&1 | grep -E "passed|failed|FAILED|Error" | tail -12 | tee $OUT/w/tests.log
tar czf $OUT/call-f.tgz -C $OUT w
