# Session 71 call d (~2.5 min; run-c.sh cut to fit the budget left after five refused starts): test_moe; the shipped
# down rule (item 523: the shortest chain a warp with a close of 2 k-steps) against session 70's (pair warps first)
# where they differ (4 tokens of Mixtral's, 8 of Qwen3's: predicted 294 against 313 us, and faster at 8 of Qwen3's)
# and at 2 / 4 of Qwen3's (the same launch); the int4 registry rows at the shipped dispatch.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-rules shipped,first --cases \
  4x8x2x4096x14336,8x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
timeout 100 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 45 python -m rooftop bench moe_experts_int4 --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn \
  > $OUT/w/bench-moe_experts_int4.txt
(cd $OUT/w && tar czf ../bench.tgz bench && rm -rf bench)
grep "│ moe" $OUT/w/bench-moe_experts_int4.txt
