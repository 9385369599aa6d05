# Session 68 call f (~2 min): int4 per-pair with only the down kernel pipelined (call c pipelined both: 35-60% slower;
# which kernel lost is unknown): stages 1/1, 1/2, 1/3, 2/1 at 8 and 32 down programs an SM. Predicted: down alone at
# 2-3 stages within 5% of 1/1 (its 154 -> 220 instructions a k-step offline).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --per-sm 8,32 --launches 8x256x2 \
  --stages 1/1,1/2,1/3,2/1 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
