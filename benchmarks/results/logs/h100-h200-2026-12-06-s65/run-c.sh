# Session 65, call c (run-b.sh, the fuller plan, never started: the device refused seven starts and the budget left
# fits ~200 s). After call a: int4 codes become floats by OR-ing them into a float's mantissa (no I2F conversion; one
# shift a byte puts its two codes under the magics 256 and 16), scale and offset by one FMA a weight; a forward's
# layers share a mask read under inference mode (one host sync a forward). 1. GPU tests: int4 on every path,
# the prefill routes. 2. Registry rows int8 / int4 at decode sizes, same run: predicted int4 1.3-1.8x int8's at one
# token of Mixtral (call a: 0.88x). 3. gpt-oss-shaped model at 64 / 256 / 2048 tokens: predicted patched faster than
# stock at 256 now (call a: 10.44 against 8.86 ms, the GPU time 4.07 against 4.90).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 70 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py \
  -k "int4 or prefill or padded" > $OUT/w/tests.txt 2>&1; tail -4 $OUT/w/tests.txt
for op in moe_experts_int8 moe_experts_int4; do timeout 35 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
timeout 60 python benchmarks/exp_moe_prefill.py $OUT/w/gptoss --models --names gpt-oss --prompts 64,256,2048 \
  2>&1 | grep -v "Warn\|RoPE scaling" > $OUT/w/gptoss.txt
tar czf $OUT/call-c.tgz -C $OUT w
grep "model S" $OUT/w/gptoss.txt; for op in moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
