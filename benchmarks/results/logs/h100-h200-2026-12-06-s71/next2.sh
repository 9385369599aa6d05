# For session 72's second call (~7 min, at most ~9; not yet run): the rest of the GPU suite (s54's run-a2.sh), the down
# pair budget's A/B, then the MoE registry rows of the four formats (graph replay): on an H200 the rows sessions 65-71
# lack (the int4 per-pair mma kernels, K_WARPS / PAIR_WARPS, session 71's down rules), on an H100 a repeat of session
# 71's call b / d. Everything in one tarball at the end (a call returns at most 8 files).
bash benchmarks/results/logs/h200-2026-12-04-s54/run-a2.sh
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
# the down kernel's pair budget (item 525): 32 (shipped) against 24 at 4 / 8 / 16 tokens of Qwen3's (8: untimed, 4
# pair warps and one range against 1 and 3 ranges, predicted faster), 4 of Mixtral's (the same launch) as a control
timeout 80 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --pair-budgets 32,24 --cases \
  4x128x8x2048x768,8x128x8x2048x768,16x128x8x2048x768,4x8x2x4096x14336 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do timeout 40 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do grep "│ moe" $OUT/w/bench-$op.txt; done
(cd $OUT && tar czf all.tgz w call-a2.tgz && rm -rf w call-a2.tgz)
