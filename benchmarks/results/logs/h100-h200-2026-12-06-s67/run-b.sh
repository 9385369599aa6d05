# Session 67, call b. int4 tiles of the dot kernels (grouped / sorted) in bf16x2 for bf16 x: per word one SHR, then a
# pair of codes (2p, 2p + 1) a PRMT + LOP3 (magic 128) + two packed fma (-136 exact, then the scale rounded once);
# no k masks where H / I are whole k-tiles (EVEN_K). Offline sm_90, Mixtral gate / up sorted (128, 64, 8, 4): loop
# 388 -> 285 instructions (6.06 -> 4.45 a weight; int8 3.83, bf16 1.69). 1. GPU tests test_moe + test_quant_matmul
# (its _pair_values helper). 2. int4 prefill at 512 / 4096 tokens of Mixtral's and Qwen3's (H100 s66: Mixtral 4096
# int4 13.34 ms, int8 8.51): predicted int4 9-10.5 ms. 3. int4 grouped against a pair a program at 4-16 tokens
# (s66: grouped 0.89 ms at 16 tokens of Mixtral; 8 tokens per-pair 0.67 ms, int8 grouped 0.54). 4. registry rows.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py tests/test_quant_matmul.py \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -1 $OUT/w/tests.txt
timeout 70 python benchmarks/exp_moe_prefill.py $OUT/w/int4 --ops --quant int4,int8 --names mixtral,qwen3 \
  --tokens 512,4096 2>&1 | grep -v "Warn" > $OUT/w/int4.txt
timeout 80 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 4,8,16 --quick 2>&1 \
  | grep -v Warn > $OUT/w/grouped.txt
for op in moe_experts_int8 moe_experts_int4; do timeout 35 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
tar czf $OUT/call.tgz -C $OUT w
grep -v "eager loop" $OUT/w/int4.txt | tail -14; tail -12 $OUT/w/grouped.txt
for op in moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
