# For session 71's first call (~6 min; not yet run). 1. test_moe at session 70's last commit (its K_WARPS /
# PAIR_WARPS kernels passed 243 on an H100). 2. The int4 per-pair down launch by the shipped rule (_pair_mma_down:
# pair warps first, then ranges, within 24 warps an SM) against exp_moe_launch's shortest_chain_down (the (pair
# warps, ranges) whose chain of dependent loads a warp, pairs x (k-steps a range + 1), is shortest), budgets 24 and
# 32, one to sixteen tokens of Mixtral's, gpt-oss-20b's and Qwen3's experts (journal item 520: Mixtral's four tokens
# 313.5 us shipped against 295.1 with pair warps 1; chain predicts pair warps 1 there and 4 / 2 pair warps with three
# ranges at two / four tokens of Qwen3's). 3. The MoE registry rows of the four formats and the Mixtral-shaped model
# (int4 / int8 / stock): on an H200 these are the rows sessions 65-70 lack.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8,1x1x32x24x8 --down-rules shipped,chain --cases \
  1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,1x32x4x2880x2880,4x32x4x2880x2880,1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,16x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -10 $OUT/w/e2e.txt
