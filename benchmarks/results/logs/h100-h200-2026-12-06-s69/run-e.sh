# Session 69 call e (~6 min). Calls b-d: int4 with bf16 x a pair a program now by mma.sync from registers with the
# L2::256B hint on the word loads (from 4 gate / up warps an SM; the grouped path's loads with the hint too): one / two /
# four tokens of Mixtral's 98.7 / 189.3 / 367.7 -> 88.3 / 163.3 / 303.2 us, grouped 8 / 16 tokens 453 / 465 -> 393 /
# 414. Now: 1. test_moe + test_integrations. 2. registry rows bf16 / int8 / fp8 / int4 in one run (s68: int4 one token
# of Mixtral's 101.9 us; predicted ~88). 3. the Mixtral-shaped model (4 layers, cache 4096, a graph a step): s68 int4
# 980 tok/s, int8 839; predicted int4 1030-1060.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py tests/test_integrations.py \
  > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 200 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -12 $OUT/w/e2e.txt
