# Session 69 call h (~4 min). 1. test_moe (a helper's review: the hint now only on 16-byte aligned word rows,
# `_hinted`; test_gpu_int4_pair_mma reads x in place and runs without the hint too; test_int4_word_views). 2. Bulk L2
# prefetches in the mma loops (moe.INT4_L2_PREFETCH: every fourth k-step each row's 256 bytes N blocks ahead, sm_90's
# cp.async.bulk.prefetch.L2; ptxas loops over a warp's distinct addresses): call g's ncu had the gate / up kernel at
# 68.5% of DRAM with 13.6 warps an SM. Predicted at one token of Mixtral's 88 -> 80-84 us with 1-2 blocks ahead, the
# down kernel's 7-step ranges unmoved. Per-pair at 1 / 4 tokens of Mixtral's and 4 of Qwen3's; grouped at 8 / 16.
# (Ran at the tree of commit 80bf5f2 plus INT4_L2_PREFETCH and the scripts' --prefetch options; both were
# removed after this call: 15-50% slower everywhere, journal item 513.)
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 120 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x32 --prefetch 0,1,2 --cases 1x8x2x4096x14336,4x8x2x4096x14336,4x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
timeout 150 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --quick --tokens 8,16 --prefetch 1,2 \
  2>&1 | grep -v Warn > $OUT/w/grouped.txt
grep "E " $OUT/w/grouped.txt
