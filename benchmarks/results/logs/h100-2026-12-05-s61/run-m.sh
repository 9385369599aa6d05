# Session 61, call m (prepared in session 60, ~5 min): 1. the fp8_linear tests as mended (journal 408: the
# expected output from x as quantize_rows quantizes it; 411: the split-K kernel for 16-byte rows only) on a GPU;
# 2. exp_fp8_gemv_split.py: the split-K fp8 kernel's candidates at 1 / 2 / 4 / 8 programs an SM on the decode shapes
# (M = 1, 16), beside cuBLAS bf16. Predicted: the tests pass; at
# 4096 x 14336 fewer programs an SM gain 5-10% over the tuner's pick of 2 / 4; the wide shapes keep theirs.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 35 python -m pytest -q -p no:logging --tb=short -n 4 tests/test_plans.py tests/test_matmul.py \
  -k "fp8_linear_replay or fp8_linear_llama or fp8_decode" 2>&1 | grep -v Warn | tail -4
timeout 240 python benchmarks/exp_fp8_gemv_split.py $OUT/w 2>&1 | grep -v Warn | tail -12
