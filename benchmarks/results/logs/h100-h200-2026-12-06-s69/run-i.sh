# Session 69 call i (~3 min). The per-pair int4 mma kernels with two k-steps' loads in flight (moe.INT4_PAIR_MMA_DEPTH
# 2; offline sm_90: gate / up 105 -> 130 registers, 12 warps an SM instead of 16; down 64-80 -> 128-132), and the
# down kernel at 8 programs an SM (ranges of ~28 k-steps at one token of Mixtral's, not 7). Call g's ncu: one token
# gate / up 68.5% of DRAM at 13.6 warps an SM (2 KB a warp in flight), down 50.1%. Predicted: depth 2 gate / up
# 57 -> ~50 us at one token (twice the bytes a warp in flight, 1.13 waves), four tokens +-3%; per-SM 8 within 3%.
# 1. test_moe (test_gpu_int4_pair_mma now at depth 2 too). 2. depth 1 / 2 at 8 / 32 down programs an SM.
# (Ran at commit 89be18a plus INT4_PAIR_MMA_DEPTH and exp_moe_launch.py's --depth, both removed after this call: depth
# 2 and 8 programs an SM lost, journal item 514.)
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x8,1x1x32 --depth 1,2 --cases 1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,2x128x8x2048x768,4x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
