# Prepared in session 57 (no machine lent): the first GPU run of the per-token quantizing epilogues (journal items
# 377-378): swiglu / geglu(quant=...), quantize_rows, Fp8Linear and quantize_model(model, "fp8"). Their GPU tests
# (the quantized cases, the compile / plan / fallback tests, the fp8 device check posing as 8.0, the slow sizes, the
# fp8 model's MLP), then the results rows of swiglu_packed_fp8 (packed [M, 2N] bf16 in, fp8 [M, N] and [M, 1] scales
# out) and quantize_rows_fp8 beside eager (PyTorch's per-token quantization after the op) and torch.compile.
# Predicted: one-tile rows (N <= 16384) 90-98% of copy, as the on-chip row kernels; rows read twice (N > 16384)
# 80-90%; >= 3x eager, >= 1x torch.compile. If rows read twice trail, QUANT_TILE (32 values a thread) or
# QUANT_LOOP_TILE / QUANT_UNROLL by gpu_session's --set.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 220 python -m pytest -q -p no:logging --tb=line tests/test_activations.py tests/test_fallbacks.py \
  tests/test_compile.py tests/test_matmul.py tests/test_quant_matmul.py tests/test_integrations.py \
  "tests/test_plans.py::test_replay_matches_reference" -k "quant or fp8 or swiglu or gpu_sizes" \
  2>&1 | grep -v Warn | tail -15 > $OUT/w/tests.txt
cat $OUT/w/tests.txt
timeout 330 python benchmarks/gpu_session.py $OUT/w/session --families activations \
  --ops swiglu_packed_fp8,quantize_rows_fp8 --providers rooftop,eager,compile --no-ncu 2>&1 | grep -v Warn | tail -24
tar czf $OUT/call-e.tgz -C $OUT w
