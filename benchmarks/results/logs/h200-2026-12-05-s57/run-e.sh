# Prepared in session 57 (no machine lent): the first GPU run of swiglu / geglu(quant="fp8"|"int8") (journal item
# 377): their GPU tests (the quantized cases, the compile and plan tests, the fp8 device check posing as 8.0, the
# slow sizes), then the results rows of swiglu_packed_fp8 (packed [M, 2N] bf16 in, fp8 [M, N] and [M, 1] scales out)
# beside eager (SwiGLU, then PyTorch's per-token quantization) and torch.compile. Predicted: one-tile rows (N <=
# 16384) 90-98% of copy, as the on-chip row kernels; rows read twice (N > 16384) 80-90%; >= 3x eager, >= 1x compile.
# If rows read twice trail, QUANT_TILE (32 values a thread) or QUANT_LOOP_TILE / QUANT_UNROLL by --set.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -p no:logging --tb=line tests/test_activations.py tests/test_fallbacks.py \
  "tests/test_plans.py::test_replay_matches_reference" tests/test_compile.py -k "quant or fp8 or swiglu or gpu_sizes" \
  2>&1 | grep -v Warn | tail -15 > $OUT/w/tests.txt
cat $OUT/w/tests.txt
timeout 300 python benchmarks/gpu_session.py $OUT/w/session --families activations --ops swiglu_packed_fp8 \
  --providers rooftop,eager,compile --no-ncu 2>&1 | grep -v Warn | tail -20
tar czf $OUT/call-e.tgz -C $OUT w
