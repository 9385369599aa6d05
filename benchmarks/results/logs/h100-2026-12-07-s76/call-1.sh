# Session 76 call 1 (~6 min on an H200): session 75's call c (the sorted path's three-kernel layout, items 538-539:
# GPU tests, layout and op times at 512-131072 tokens, prefill models at 2048), then the bf16 / int8 / fp8 MoE
# registry rows the H200 lacks (session 74's next.sh, H200 half). Everything is written under $OUT as it runs.
bash benchmarks/results/logs/h100-2026-12-06-s75/call-c.sh
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
for op in moe_experts moe_experts_int8 moe_experts_fp8; do timeout 55 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; grep "│ moe" $OUT/w/bench-$op.txt; done
