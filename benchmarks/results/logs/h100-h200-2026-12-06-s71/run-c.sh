# Session 71 call c (~6 min): _pair_mma_down by the shortest chain a warp with a close of 2 k-steps (item 523): test_moe;
# the shipped rule against session 70's (pair warps first) where they differ (4 tokens of Mixtral's, 8 of Qwen3's:
# predicted 294 against 313 us, and faster at 8 of Qwen3's) and at 2 / 4 of Qwen3's (the same launch); the
# registry rows of the four formats and the Mixtral-shaped model at the shipped dispatch.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 100 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-rules shipped,first --cases \
  4x8x2x4096x14336,8x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
for op in moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -10 $OUT/w/e2e.txt
