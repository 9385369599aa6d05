# Session 65, call a. 1. The gpt-oss-shaped model's 256-token prefill (session 64: patched 9.88 ms against stock's 8.37,
# H100): both models' ten costliest kernels at 64 / 256 / 2048 tokens (torch.profiler), and the experts alone at 256
# tokens (runs of 32 pairs an expert) at every sorted launch. Predicted: the sorted path's two kernels at BLOCK_M 32
# take ~2x the grouped_mm-like stock experts' time a layer at 256 (tile waste and the layout's ~20 small ops), or the
# attention route with sinks is slower than eager's 256 x 256 scores. 2. Mixtral-shaped model (4 layers) prefill 64-4096
# (the step call b of s64 ran out of time on): predicted patched within 5% of stock at 64-256, 10-15% faster at 2048+.
# 3. Codes (fp8 / int8) at every launch incl. the shipped 4-stage one, Mixtral's 4096 tokens: predicted the 4-stage one
# 3-8% faster than 3 (340-350 TFLOP/s on the H100); int4 there too. 4. First int4 experts (uncommitted draft: group
# scales, the codes unpacked in each kernel's weight tile): registry rows moe_experts_int4 against int8 / fp8 at decode
# sizes, rooftop only: predicted 1.3-1.7x int8's at one token (half the bytes, the unpacking's ALU in a GEMV).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py -k "int4 or quantize_model" \
  > $OUT/w/tests.txt 2>&1; tail -4 $OUT/w/tests.txt
timeout 100 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 64,256,2048 \
  --profile 2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
timeout 45 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss-ops --ops --names gpt-oss --tokens 256 \
  2>&1 | grep -v Warn > $OUT/w/gptoss-ops.txt
timeout 120 python benchmarks/exp_moe_prefill.py $OUT/w/mixtral --models --names mixtral --prompts 256,2048,4096 \
  2>&1 | grep -v Warn > $OUT/w/mixtral.txt
timeout 80 python benchmarks/exp_moe_prefill.py $OUT/w/codes --ops --quant --names mixtral \
  --tokens 4096 2>&1 | grep -v "Warn\|bf16" > $OUT/w/codes.txt
for q in int4 int8; do timeout 55 python -m rooftop bench moe_experts_$q --providers rooftop --out $OUT/w/bench \
  2>&1 | grep -v Warn > $OUT/w/bench-$q.txt; done
tar czf $OUT/call-a.tgz -C $OUT w
grep "model S" $OUT/w/gptoss.txt $OUT/w/mixtral.txt; cat $OUT/w/gptoss-ops.txt; grep -v "eager loop" $OUT/w/codes.txt
tail -14 $OUT/w/bench-int4.txt $OUT/w/bench-int8.txt
