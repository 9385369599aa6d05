# For session 68's first call (~7 minutes; not yet run). 1. GPU tests test_moe + test_integrations whole: cabbb5b's
# load hints, paired-only threshold and register-cap option ran offline / on the CPU only (item 493). 2. int4 grouped
# launches (INT4_LAUNCHES: register cap 168, 2- / 8-warp programs; item 494) at 8 / 16 tokens: shipped ~0.46-0.50 ms
# at Mixtral's (latency-bound, two programs an SM); predicted the cap 10-25% faster. 3. Registry rows bf16 / int8 /
# int4 in one run (H100 session 67: one token of Mixtral's 249.7 / 168.0 / 102.7 us; 8 tokens int8 0.559, int4 0.496).
# 4. int4 / int8 prefill at 4096 tokens of Mixtral's (H100 session 67: 8.37 / 8.27 ms, bf16 5.50).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py tests/test_integrations.py \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -1 $OUT/w/tests.txt
timeout 150 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 8,16 2>&1 | grep -v Warn \
  > $OUT/w/grouped.txt
for op in moe_experts moe_experts_int8 moe_experts_int4; do timeout 40 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
timeout 50 python benchmarks/exp_moe_prefill.py $OUT/w/int4 --ops --quant int4,int8 --names mixtral --tokens 4096 \
  2>&1 | grep -v "Warn" > $OUT/w/int4.txt
tar czf $OUT/call.tgz -C $OUT w
grep "round-robin" $OUT/w/grouped.txt | grep -v "no PDL"
for op in moe_experts moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
grep "shipped" $OUT/w/int4.txt
