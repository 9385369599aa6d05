# Session 59, call c: s57's run-f.sh without the int4 models (--no-int4: their tuning from an empty cache took the
# whole of s58's call): a Llama-3-8B-shaped model (8 layers) decoding over a static cache of 4096 with W8A8 fp8 linears
# (quantize_model(model, "fp8") after patch_model) beside stock and patched bf16, batch 1 and 8. Predicted at batch 1:
# between patched bf16 (~723 tok/s) and int4 (~1282, the results file): 1-byte weights, but matmul_fp8 at M = 1 is a
# GEMM tile kernel, not a GEMV; at batch 8 nearer int4's.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 250 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --fp8 --no-int4 --repeats 2 2>&1 \
  | grep -v Warn | tail -8
timeout 200 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --batch 8 --fp8 --no-int4 \
  --repeats 1 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-c.tgz -C $OUT w
