# Session 72 calls d and e, sent inline right after call c (run-c.sh) on the same warm H100 with the 157 s left:
# INT4_DOWN_EARLY off / on at two tokens of Qwen3's, one of gpt-oss-20b's, four of Mixtral's (call d), then the int4
# registry rows with it on (call e).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests
timeout 75 python benchmarks/exp_moe_launch.py $OUT/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-early 0,1 --cases 2x128x8x2048x768,1x32x4x2880x2880,4x8x2x4096x14336 2>&1 \
  | grep "rooftop mma"
timeout 70 python -m rooftop bench moe_experts_int4 --providers rooftop --out $OUT/bench 2>&1 | grep "│ moe"
