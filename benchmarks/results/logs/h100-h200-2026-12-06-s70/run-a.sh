# Session 70 call a (~5 min). 1. test_moe (session 69's last commit's _gate_up_program; K_WARPS: the per-pair int4 mma
# gate / up kernel's row tiles shared by up to 4 warps, its k-steps dealt round-robin, where a step's pairs leave it
# fewer warps an SM than INT4_PAIR_MMA_LAUNCH's aim; PAIR_WARPS: the down kernel's token's k pairs dealt to up to 8
# warps a tile instead of walked one after another). 2. exp_moe_launch --mma GxDxPxAxW: aim 1 and pair warps 1
# (session 69's kernels), K_WARPS alone, both, down at 16 warps an SM, aim 32; with and without the L2 hint; one token
# of Mixtral's (13.6 warps an SM: k 1 at aim 16), gpt-oss-20b's (5.5: k 2, 4 pairs; 41 us without the hint, 47 with,
# before; predicted ~30), Qwen3's (2.9: k 4, 8 pairs; CUDA-core 20.1, mma 24.1 before; predicted ~14) and two of
# Qwen3's; the CUDA-core launch beside them.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 240 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x32x1x1,1x1x32x16x1,1x1x32x16x8,1x1x16x16x8,1x1x32x32x8 --l2-256b 0,1 \
  --cases 1x8x2x4096x14336,1x32x4x2880x2880,1x128x8x2048x768,2x128x8x2048x768 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
# 3. ncu per kernel at one token of Qwen3's with the shipped dispatch (K_WARPS 4, PAIR_WARPS 8): which kernel holds
# the time
timeout 120 python benchmarks/probe_op_kernels.py moe_experts_int4 1,128,8,2048,768 2>&1 | grep -v Warn > $OUT/w/probe.txt
cat $OUT/w/probe.txt
