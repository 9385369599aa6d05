# Session 69 call b. The per-pair path's int4 kernels for bf16 x by mma.sync from registers (_moe_gate_up_mma_kernel,
# _moe_down_mma_kernel: _int4_mma_sums with its 8 x rows all the pair's; offline sm_90 105 / 64 registers at one warp,
# ~2.8 instructions a code in the gate / up loop against the CUDA-core kernels' 3.7-4.8). 1. test_moe whole (the new
# GPU-only test_gpu_int4_pair_mma and every bf16 int4 per-pair test now on them). 2. Against the CUDA-core kernels at
# 1 and 4 tokens of Mixtral's and Qwen3's experts: predicted one token of Mixtral's ~99 -> 75-85 us.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x32,1x1x16,2x1x32,2x2x16,4x4x8,1x2x32 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
