# Prepared in session 57 (no machine lent): W8A8 fp8_linear (journal item 378: x quantized per token by
# quantize_rows, matmul_fp8 with both scales in its epilogue) at Llama-3 prefill shapes (M 512 / 2048 / 8192 x 8B
# gate_up and down, 70B qkv) beside cuBLAS bf16 (F.linear, the same weight dequantized) and PyTorch's W8A8
# (per-token quantization by torch ops, then torch._scaled_mm), tuned from an empty cache. Predicted: 1.6-1.9x
# cuBLAS bf16 at M >= 2048 (matmul_fp8 runs 1.00-1.10x _scaled_mm at ~2x bf16's rate; quantize_rows adds a pass over
# x, 2-5% at K = 4096), 1.2-1.5x at M = 512; >= 1.05x the scaled_mm path (its quantization takes ~5 eager kernels).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 500 python benchmarks/gpu_session.py $OUT/w/session --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn | tail -24
tar czf $OUT/call-g.tgz -C $OUT w
