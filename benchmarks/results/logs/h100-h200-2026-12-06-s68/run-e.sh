# Session 68 call e (~6 min): 1. test_moe whole after AHEAD's removal (PER_PAIR_STAGES (3, 3) shipped for 16-bit and
# one-byte experts, int4 (1, 1)). 2. registry rows bf16 / int8 / fp8 / int4 in one run (call a: int8 one token of
# Mixtral's 164.8 us, the others unchanged); predicted int8 ~132, fp8 ~121. 3. the Mixtral-shaped model (4 layers,
# cache 4096, a graph a step) int8 / int4: session 66 int8 791 tok/s, int4 1002; predicted int8 +8-12%.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 200 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -12 $OUT/w/e2e.txt
