# Session 68 call c (~5 min): the per-pair kernels' k loops software-pipelined (PER_PAIR_STAGES /
# INT4_PER_PAIR_STAGES, tl.range num_stages: cp.async of the next k-tiles into shared memory). Call b's ncu: one token
# of Mixtral's int4 experts, gate / up 59.9 us at 63% DRAM, down 41.2 us at 46.5% (one 16-byte load in flight a
# thread: offline SASS, no pipelining at num_stages 3 without tl.range); the dense int4 GEMV 78.8% on the same bytes.
# Predicted: int4 one token 93 -> 70-80 us, int8 (gate / up 70%, down 52%) 165 -> 130-145 us.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --per-sm 8,32 --launches 8x256x2 \
  --stages 1/1,2/2,3/3,4/4 2>&1 | grep -v Warn > $OUT/w/int4.txt
timeout 110 python benchmarks/exp_moe_launch.py $OUT/w/int8 --quant int8 --per-sm 4,16 --launches 8x256x2 \
  --stages 1/1,2/2,3/3 2>&1 | grep -v Warn > $OUT/w/int8.txt
timeout 80 python benchmarks/exp_moe_launch.py $OUT/w/bf16 --per-sm 4 --launches 8x256x2 \
  --stages 1/1,2/2,3/3 2>&1 | grep -v Warn > $OUT/w/bf16.txt
grep rooftop $OUT/w/int4.txt $OUT/w/int8.txt $OUT/w/bf16.txt | sed 's/.*w\///'
