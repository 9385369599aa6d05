# Session 66, call c. After call b (H100): int4 experts ship (8, 256, 2) with 32 down programs an SM (one token of
# Mixtral's 94.0 us, 66% of copy; s65 191), and take the grouped path from three pairs an expert (16 tokens of
# Mixtral's: grouped 0.89 ms against a pair a program's 1.31; 8 tokens 0.88 against 0.68). 1. GPU tests (int4, the
# dispatch). 2. Registry rows int8 / int4 (predicted int4 at one token of Mixtral's 1.6-1.8x int8's; call a 1.26x with
# the old down launch). 3. int4 a pair a program against grouped at 8 / 12 / 16 tokens (predicted the crossing near
# 11 tokens of Mixtral's). 4. gpt-oss-shaped model at 256 tokens: where it synchronises the host (call b: patched 7.26
# ms against stock 6.85 with less GPU time, 3.93 against 4.92 ms, and as much CPU time: the two add up).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "int4 or dispatch or quantized" \
  > $OUT/w/tests.txt 2>&1; tail -2 $OUT/w/tests.txt
for op in moe_experts_int8 moe_experts_int4; do timeout 35 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
timeout 70 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 8,12,16 --quick 2>&1 \
  | grep -v Warn > $OUT/w/grouped.txt
timeout 80 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 256 --profile \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
tar czf $OUT/call-c.tgz -C $OUT w
for op in moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done; cat $OUT/w/grouped.txt
grep -v "^  _warn\|---\|Name  " $OUT/w/gptoss.txt | grep -A30 "model S   256\|synchronisations"
