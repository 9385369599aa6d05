# Prepared in session 52 for the next session, on branch epilogue-activate (NOTES item 354): the GEMM epilogue's
# activations by activations._activate with div.approx (activations._divide). GPU tests of the GEMM and the
# activations, then the fused bias + SiLU against eager and cuBLAS alone in alternating bursts (call d of session 52
# on main: x cublas_alone 0.93 / 0.98 / 0.90 / 0.84 at 4096^3 / 8192^3 / 2048 x 14336 x 4096 / 2048^3), then the
# activations' own rows at 16K-64K (their SASS is unchanged offline; a check that they did not move).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 12 tests/test_matmul.py tests/test_activations.py tests/test_compile.py \
  -p no:logging --tb=short 2>&1 | grep -v Warn > $OUT/w/gpu-tests-h.txt
tail -8 $OUT/w/gpu-tests-h.txt
timeout 150 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_bias_silu --rounds 6 \
  --providers cublas,eager,cublas_alone --cases 4096x4096x4096,8192x8192x8192,2048x14336x4096,2048x2048x2048 2>&1 \
  | grep -v Warn > $OUT/w/exp-bias-silu.log
tail -20 $OUT/w/exp-bias-silu.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families activations --ops bias_gelu,swiglu \
  --widths 16384,32768,65536 --providers rooftop,compile --no-ncu 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-h.tgz -C $OUT w
