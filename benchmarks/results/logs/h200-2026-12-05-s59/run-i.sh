# Prepared in session 59 (device time spent), for the next session: the split-K fp8 kernel of decode sizes
# (matmul._fp8_gemv_kernel, journal item 402: matmul_fp8 / fp8_linear at M <= 16 with b = w.t(); swap-AB QGMMA
# 64x16x32, K split to ~2-4 programs an SM, partials summed in k order, PDL). 1. its GPU tests (every candidate
# correct, the split test, the fp8 model tests); 2. fp8_linear's rows, now with decode M = 1 / 16, beside cuBLAS bf16
# and PyTorch's quantization + _scaled_mm; 3. fp8_linear's host path (session 59: 133 us a call from Python at M = 512
# against 62-112 us on the GPU). Predicted: M = 1 1.6-1.9x cuBLAS bf16 by graph (W8A16's int8 GEMV 1.69-1.85x;
# fp8_linear adds quantize_rows' ~2 us), M = 16 1.4-1.8x.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -p no:logging --tb=line -n 12 tests/test_matmul.py tests/test_integrations.py \
  tests/test_compile.py tests/test_plans.py -k "fp8 or every_candidate or autotune or replay" 2>&1 | grep -v Warn \
  | tail -8
timeout 200 python benchmarks/gpu_session.py $OUT/w/session --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn | tail -20
timeout 90 python benchmarks/probe_quant_host.py $OUT/w/host --fp8 --nk 4096x14336 --batches 1,16,512 \
  --profile-batch 512 2>&1 | grep -v Warn | tail -30
tar czf $OUT/call-i.tgz -C $OUT w
