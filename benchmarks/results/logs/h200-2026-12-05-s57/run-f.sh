# Prepared in session 57 (no machine lent), after run-e.sh passed: a Llama-3-8B-shaped model (8 layers) decoding over
# a static cache of 4096 with W8A8 fp8 linears (quantize_model(model, "fp8") after patch_model: each projection's
# input quantized per token, the MLP's by the quantizing SwiGLU, matmul_fp8 with both scales in its epilogue) beside
# stock, patched and patched + int4 (journal item 378). Predicted at batch 1: between patched bf16 (~723 tok/s) and
# int4 (~1282): the weights are 1 byte, but matmul_fp8 at M = 1 is a GEMM tile kernel, not a GEMV; at batch 8 nearer
# int4's. The first figures of an fp8 model: where it lands says whether fp8 decode needs its own GEMV path.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 280 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --fp8 --repeats 2 2>&1 \
  | grep -v Warn | tail -14
timeout 250 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --batch 8 --fp8 --repeats 1 2>&1 \
  | grep -v Warn | tail -14
tar czf $OUT/call-f.tgz -C $OUT w
