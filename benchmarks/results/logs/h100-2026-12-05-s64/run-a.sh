# Session 64, call a: moe_experts' sorted path (journal 460): test_moe and test_integrations on the GPU, then
# exp_moe_prefill.py --ops --quant (bf16 with six launches, fp8 / int8 with two, against grouped_mm and the eager
# loop, 32-4096 tokens of Mixtral's, Qwen3-30B-A3B's and gpt-oss-20b's experts). Predicted: tests pass; the sorted
# path at 512-4096 tokens within 10% of grouped_mm's time or faster (grouped_mm: CUTLASS, but no fused gather or
# gate), 2-5x faster than the eager loop; 300-550 TFLOP/s at 2048+ tokens of Mixtral.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn | tail -8
timeout 330 python benchmarks/exp_moe_prefill.py $OUT/w --ops --quant 2>&1 | grep -v Warn | tail -150
tar czf $OUT/call-a.tgz -C $OUT w
