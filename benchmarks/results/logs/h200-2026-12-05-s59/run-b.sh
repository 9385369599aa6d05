# Session 59, call b: s57's run-g.sh (W8A8 fp8_linear at Llama-3 prefill shapes beside cuBLAS bf16 and PyTorch's
# per-token quantization + torch._scaled_mm), tuned from an empty cache; the first GPU rows of fp8_linear.
# Predicted: 1.6-1.9x cuBLAS bf16 at M >= 2048, 1.2-1.5x at M = 512, >= 1.05x the scaled_mm path.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 540 python benchmarks/gpu_session.py $OUT/w/session --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn | tail -24
tar czf $OUT/call-b.tgz -C $OUT w
