# For session 67's first H200 call (~8 minutes; not yet run): sessions 65-66's MoE work on the anchors' card.
# 1. GPU tests: test_moe + test_integrations whole (285 passed on an H100 in session 66). 2. Registry rows bf16 / int8
# / int4 experts in one run (H100 session 66: one token of Mixtral's 249.6 / 165.0 / 101.9 us; predicted on the H200
# int4 ~60-65% of copy, 1.6x int8's). 3. The prefill models (H100: gpt-oss-shaped 6.80 / 15.0 ms at 256 / 2048 tokens
# against stock's 9.07 / 39.8; Mixtral-shaped 6.82 / 17.5 against 9.95 / 23.4).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py tests/test_integrations.py \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -1 $OUT/w/tests.txt
for op in moe_experts moe_experts_int8 moe_experts_int4; do timeout 40 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
timeout 200 python benchmarks/exp_moe_prefill.py $OUT/w/models --models --prompts 64,256,2048 \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/models.txt
tar czf $OUT/call.tgz -C $OUT w
for op in moe_experts moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
grep "model S" $OUT/w/models.txt
