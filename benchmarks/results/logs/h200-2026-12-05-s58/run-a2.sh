# Session 58: s54's run-a2.sh (the rest of the GPU suite: row ops, decode attention, RoPE, the harness, the report,
# the integrations; sessions 53-58's tests among them, e.g. rms_norm(quant=)'s NaN rows, the fp8 norm -> MLP handoff,
# patch_model's probes) then benchmarks/check_architectures.py in bf16 (predicted: every architecture within ~1e-2).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 300 python -m pytest -q -n 14 --timeout 200 -p no:logging --tb=line --durations=15 tests \
  --deselect tests/test_plans.py --deselect tests/test_compile.py --deselect tests/test_matmul.py \
  --deselect tests/test_quant_matmul.py --deselect tests/test_attention.py 2>&1 | grep -v Warn \
  > $OUT/w/gpu-tests-a2.txt
tail -25 $OUT/w/gpu-tests-a2.txt
timeout 200 python benchmarks/check_architectures.py $OUT/w/arch-bf16 --dtype bfloat16 2>&1 | grep -v Warn \
  | grep -v "^\[transformers\]" | tail -42
tar czf $OUT/call-a2.tgz -C $OUT w
