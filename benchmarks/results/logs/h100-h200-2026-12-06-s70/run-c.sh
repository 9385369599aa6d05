# Session 70 call c (~3 min). Call a (H100): PAIR_WARPS 8 took one token of Qwen3's to 15.9 us (26.0 without; the
# CUDA-core kernels 20.0) and gpt-oss-20b's 39.6 -> 36.5, but two tokens of Qwen3's lost (28.7 against 26.1: 46 warps
# an SM, two waves of its 79-register programs); K_WARPS at an aim of 32 won where warps are few (Qwen3's two tokens
# k 4 26.1 against k 2 28.7) and lost at Mixtral's one (k 2, 89.3 against 86.9). Now the down kernel's launch is
# budgeted in warps an SM (_pair_mma_down: PAIR_WARPS halved until the tiles' warps fit, then ranges of I while the
# budget holds; floor, not cdiv), the aim 24 (Mixtral's one token stays at k 1, gpt-oss's and Qwen3's two take 4).
# test_moe, then exp_moe_launch --mma at budgets 16 / 24 / 32 (pair warps 8), 24 without pair warps, aim 16 against
# 24, one to sixteen tokens of the three models, the L2 hint on; the CUDA-core launch beside them.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 240 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8,1x1x16x24x8,1x1x32x24x8,1x1x24x24x1,1x1x24x16x8 --cases \
  1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,1x32x4x2880x2880,4x32x4x2880x2880,1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,16x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
