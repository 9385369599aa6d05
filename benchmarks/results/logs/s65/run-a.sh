# Session 65, call a. 1. The gpt-oss-shaped model's 256-token prefill (session 64: patched 9.88 ms against stock's
# 8.37, H100): both models' ten costliest kernels at 64 / 256 / 2048 tokens (torch.profiler), and the experts alone at
# 256 tokens (runs of 32 pairs an expert) at every sorted launch. Predicted: the sorted path's two kernels at BLOCK_M
# 32 take ~2x the grouped_mm-like stock experts' time a layer at 256 (tile waste and the layout's ~20 small ops), or
# the attention route with sinks is slower than eager's 256 x 256 scores. 2. Mixtral-shaped model (4 layers) prefill
# 64-4096 (the step call b of s64 ran out of time on): predicted patched within 5% of stock at 64-256, 10-15% faster
# at 2048+. 3. Codes (fp8 / int8) at every launch incl. the shipped 4-stage one, Mixtral's 4096 tokens: predicted the
# 4-stage one 3-8% faster than 3 (340-350 TFLOP/s on the H100). 4. The H200 rows of families moe_prefill and
# attention_sinks (gpu_session.py, no ncu).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 64,256,2048 \
  --profile 2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
timeout 60 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss-ops --ops --names gpt-oss --tokens 256,1024 \
  2>&1 | grep -v Warn > $OUT/w/gptoss-ops.txt
timeout 150 python benchmarks/exp_moe_prefill.py $OUT/w/mixtral --models --names mixtral --prompts 64,256,2048,4096 \
  2>&1 | grep -v Warn > $OUT/w/mixtral.txt
timeout 90 python benchmarks/exp_moe_prefill.py $OUT/w/codes --ops --quant --all-launches --names mixtral \
  --tokens 4096 2>&1 | grep -v "Warn\|bf16" > $OUT/w/codes.txt
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families moe_prefill,attention_sinks --no-ncu \
  2>&1 | grep -v Warn > $OUT/w/session.txt
tar czf $OUT/call-a.tgz -C $OUT w
grep "model S" $OUT/w/gptoss.txt $OUT/w/mixtral.txt; cat $OUT/w/gptoss-ops.txt; grep -v "eager loop" $OUT/w/codes.txt
tail -25 $OUT/w/session.txt
