# Session 71 call a (~6 min). 1. test_moe (session 70's K_WARPS / PAIR_WARPS kernels; the new
# test_gpu_int4_prefetch_down). 2. Session 70's next.sh sweep: the int4 per-pair down launch by the shipped rule
# (_pair_mma_down) against shortest_chain_down, budgets 24 and 32, 1-16 tokens of Mixtral's, gpt-oss-20b's and Qwen3's
# experts. 3. The gate / up kernel pulling down's codes and scales into L2 (moe.INT4_PREFETCH_DOWN_L2 / _AT; item 522):
# off, within half the L2 before the sums / after them, within the whole L2 before them; predicted one token of
# Qwen3's 16.5 -> 11-12 us (down from L2: ~7.5 -> ~3-4 us), Mixtral's untouched (its 59 MB of down exceed the L2).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 120 python benchmarks/exp_moe_launch.py $OUT/w/pf --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --prefetch-down 0/1,0.5/1,0.5/2,1/1 --cases \
  1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,1x32x4x2880x2880,2x32x4x2880x2880 \
  2>&1 | grep -v Warn > $OUT/w/pf.txt
grep "rooftop mma" $OUT/w/pf.txt
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8,1x1x32x24x8 --down-rules shipped,chain --cases \
  1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,1x32x4x2880x2880,4x32x4x2880x2880,1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,16x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
