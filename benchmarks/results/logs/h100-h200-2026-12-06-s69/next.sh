# For session 70's first call (~2 min). The int4 per-pair mma down kernel at one token of Mixtral's ran at 50% of DRAM
# (call g's ncu: 16 ranges of I a column tile, 7 k-steps each): fewer, longer ranges (INT4_PAIR_MMA_LAUNCH's third
# field, down programs an SM: 4 / 8 / 16 against the shipped 32). Predicted: 8-16 within 3% at one token, the down
# kernel's share moving less than its prologue's (a k-step's load latency a range).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x4,1x1x8,1x1x16,1x1x32 --cases 1x8x2x4096x14336,2x8x2x4096x14336,4x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
