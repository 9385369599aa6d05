# Session 69 call c. Call b: the per-pair int4 kernels by mma.sync (~2.8 instructions a code against 3.7-4.8) no
# faster at Mixtral's (103 us against 98.6): not the issue rate. Both read 16-64 bytes of a row a k-step; the dense
# GEMV that reaches 79% of DRAM reads longer runs. Now: the words' loads with PTX's L2::256B prefetch-size hint
# (moe.INT4_L2_256B; the mma loop's SASS unchanged by it, the CUDA-core one 238 -> 400 instructions from the join).
# Predicted: the hint lifts the mma kernels to 75-85% at one token of Mixtral's if DRAM row locality is what holds
# them. 1. test_moe (the group-128 case of test_gpu_int4_pair_mma mended: I = 896). 2. Each with and without the hint.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x32,1x2x32 --l2-256b 0,1 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
