# Session 68 call b (~4 min): 1. per-kernel ncu of one cold call (probe_op_kernels.py): int4 / int8 / bf16 experts at
# one token of Mixtral's (int4 66% of copy on the H100 where the dense int4 GEMV reads the same bytes at ~78% on the
# H200), 4 tokens of Mixtral's, one token of Qwen3's; the dense int4 GEMV at 1 x 28672 x 8192 beside. Predicted: the
# down kernel below gate / up's DRAM % (its 4.8 instructions a weight against 3.7). 2. the int4 down kernel with two
# rows a thread (16 x 256 x 2) and 16 x 256 x 4 at 16 / 32 programs an SM. 3. test_moe's int4 tests (the register cap).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/probe_op_kernels.py moe_experts_int4 1,8,2,4096,14336 moe_experts_int8 1,8,2,4096,14336 \
  moe_experts 1,8,2,4096,14336 moe_experts_int4 4,8,2,4096,14336 moe_experts_int4 1,128,8,2048,768 \
  quant_matmul_int4 1,28672,8192 > $OUT/w/kernels.txt 2>&1
timeout 100 python benchmarks/exp_moe_launch.py $OUT/w/launch --quant int4 --per-sm 16,32 \
  --launches 8x256x2/8x256x2,8x256x2/16x256x2,8x256x2/16x256x4 2>&1 | grep -v Warn > $OUT/w/launch.txt
timeout 90 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k int4 > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
cat $OUT/w/kernels.txt | grep -v "^==" ; grep "rooftop" $OUT/w/launch.txt
