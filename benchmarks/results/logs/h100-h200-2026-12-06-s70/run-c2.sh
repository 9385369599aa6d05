# Session 70 call c2: run-c.sh without test_moe (device time nearly spent: seven refused starts), the sweep only.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8,1x1x16x24x8,1x1x32x24x8,1x1x24x24x1 --cases \
  1x8x2x4096x14336,2x8x2x4096x14336,4x8x2x4096x14336,1x32x4x2880x2880,4x32x4x2880x2880,1x128x8x2048x768,2x128x8x2048x768,4x128x8x2048x768,16x128x8x2048x768 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
