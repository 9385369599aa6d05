# Prepared in session 61 for the next (~8 min: two calls if the budget is short): fp8 / int8 experts (journal 427-428),
# their first GPU run: 1. test_moe.py and test_integrations.py on the GPU (both at Mixtral's / Qwen3's shapes,
# quantize_model's QuantMoEExperts; gpt-oss-20b's experts with biases and the clamped gate,
# journal 431); 2. the moe family's rows (moe_experts, moe_experts_fp8, moe_experts_int8: rooftop,
# eager, torch.compile; grouped_mm for bf16); 3. the quantized experts' launches (exp_moe_launch.py --quant fp8: six,
# 1 and 4 programs an SM); 4. the Mixtral-shaped model end to end with --fp8 (its linears W8A8, its experts fp8
# weight-only), batch 1 and 8. Predicted (H200): moe_experts_fp8 at one token of Mixtral's experts 75-88% of its
# floor (half the bf16 bytes: ~1.7x moe_experts); int8 experts within 5% of fp8's time; the fp8 model at batch 1
# 1050-1200 tok/s against patched bf16's ~730 (its floor 0.62x bf16's). Then wire the best launch
# (QUANT_GATE_UP_LAUNCH / QUANT_DOWN_LAUNCH).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn | tail -5
timeout 120 python benchmarks/gpu_session.py $OUT/w/session --families moe --no-ncu 2>&1 | grep -v Warn | tail -20
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w --quant fp8 2>&1 | grep -v Warn | tail -30
timeout 200 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --repeats 2 2>&1 | grep -v Warn | tail -7
timeout 150 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-u.tgz -C $OUT w
