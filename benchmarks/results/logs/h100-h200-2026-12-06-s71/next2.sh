# For session 72's second call (~6 min; not yet run): the rest of the GPU suite (s54's run-a2.sh), then the MoE
# registry rows of the four formats (graph replay): on an H200 the rows sessions 65-71 lack (the int4 per-pair mma
# kernels, K_WARPS / PAIR_WARPS, session 71's down rule), on an H100 a repeat of session 71's call b / d.
bash benchmarks/results/logs/h200-2026-12-04-s54/run-a2.sh
set -x
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
(cd $OUT/w && tar czf ../bench.tgz bench && rm -rf bench)
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do grep "│ moe" $OUT/w/bench-$op.txt; done
