# Session 66, call d. 1. Registry rows bf16 / int8 / int4 experts, same run (call c, H100: int4 at one token of
# Mixtral's 102.3 us against int8's 167.7, 1.64x; predicted on an H200 1.6-1.8x int8's, ~60-70% of copy). 2. The
# Mixtral-shaped model (4 layers, cache 4096, batch 1, graphs) with int4 experts beside int8 (quantize_model(bits=4)
# makes patched experts int4 since s65; untimed). ROOFTOP_AUTOTUNE=0: the dense quantized linears at their untuned
# default (the tuner from an empty cache takes ~9 minutes). Predicted int4 1.3-1.5x int8's tok/s (experts ~85% of a
# step's bytes). 3. gpt-oss-shaped model at 256 tokens, torch ops by host time (call c: patched 7.44 ms against stock's
# 6.96 with 1 ms less GPU time and no per-layer sync left: host-bound).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
for op in moe_experts moe_experts_int8 moe_experts_int4; do timeout 40 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 260 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
timeout 80 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 256 --profile \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
tar czf $OUT/call-d.tgz -C $OUT w
for op in moe_experts moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -14 $OUT/w/e2e.txt; grep "model S" $OUT/w/gptoss.txt
