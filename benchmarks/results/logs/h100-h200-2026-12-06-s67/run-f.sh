# Session 67, call f (the last: ~6 minutes of device time left). The committed code (int4 grouped from two pairs an
# expert). 1. GPU tests: test_moe's int4 / quantized / grouped / dispatch ones. 2. Registry rows int8 / int4 on one
# card (predicted int4 at 8 tokens of Mixtral ~0.46 ms on an H200, the grouped path now; was 0.67 a pair a program).
# 3. int4 / int8 prefill at 4096 tokens of Mixtral's (H100 call c: int4 8.40 ms, int8 8.26).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 70 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "int4 or quantized or grouped or dispatch" \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -1 $OUT/w/tests.txt
for op in moe_experts_int8 moe_experts_int4; do timeout 35 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
timeout 50 python benchmarks/exp_moe_prefill.py $OUT/w/int4 --ops --quant int4,int8 --names mixtral --tokens 4096 \
  2>&1 | grep -v "Warn" > $OUT/w/int4.txt
tar czf $OUT/call.tgz -C $OUT w
for op in moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
grep "shipped" $OUT/w/int4.txt
