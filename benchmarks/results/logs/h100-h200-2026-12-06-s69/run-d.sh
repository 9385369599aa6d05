# Session 69 call d. Call c: the L2::256B prefetch-size hint on _int4_mma_sums' word loads took the per-pair mma
# kernels at one / four tokens of Mixtral's experts to 86.0 / 290.8 us (72 / 85% of copy; the CUDA-core kernels 98.8 /
# 367.7); Qwen3's one token 23.9 against the CUDA-core 20.0 (384 one-warp programs: the dispatch now takes mma from 4
# warps an SM, INT4_PAIR_MMA_MIN_WARPS). Now: 1. test_moe (grouped kernels with the hint too). 2. CUDA-core against mma
# at 1 / 2 / 4 tokens of Mixtral's and Qwen3's (the threshold). 3. The grouped path with the hint (it reads 64 bytes of
# a row a k-step too) against a pair a program at 1-16 tokens of Mixtral's, Qwen3's and gpt-oss-20b's: predicted the
# grouped int4 at 8 tokens of Mixtral's 0.45 -> ~0.30 ms, and the two-pairs-an-expert threshold to move.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x32,2x2x32 --cases 1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
timeout 240 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --quick --no-l2-256b --tokens 1,2,4,8,16 \
  2>&1 | grep -v Warn > $OUT/w/grouped.txt
grep "E " $OUT/w/grouped.txt
