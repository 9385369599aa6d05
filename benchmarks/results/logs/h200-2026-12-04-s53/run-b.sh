# Prepared in session 53 (no machine lent), for the next session after run-a.sh passed on the merge of branch
# epilogue-activate (NOTES items 354, 356): the fused bias + SiLU (the GEMM epilogue's SiLU by activations._activate,
# div.approx: 10 SASS instructions an element against 26) against eager and cuBLAS alone in alternating bursts
# (session 52 call d on main, x cublas_alone: 0.93 / 0.98 / 0.90 / 0.84 at 4096^3 / 8192^3 / 2048 x 14336 x 4096 /
# 2048^3; predicted 0.97-1.0), matmul + residual at the two shapes not measured after item 353, then the
# activations' own rows at 16K-64K (their SASS is unchanged offline: a check that they did not move; results file
# bias_gelu 89.3-92.2%, swiglu 98.9-99.2%).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_bias_silu --rounds 6 \
  --providers cublas,eager,cublas_alone --cases 4096x4096x4096,8192x8192x8192,2048x14336x4096,2048x2048x2048 2>&1 \
  | grep -v Warn > $OUT/w/exp-bias-silu.log
tail -20 $OUT/w/exp-bias-silu.log
timeout 110 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_residual --rounds 6 \
  --providers cublas,eager,cublas_alone --cases 2048x14336x4096,512x4096x4096 2>&1 \
  | grep -v Warn > $OUT/w/exp-residual.log
tail -12 $OUT/w/exp-residual.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families activations --ops bias_gelu,swiglu \
  --widths 16384,32768,65536 --providers rooftop,compile --no-ncu 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-b.tgz -C $OUT w
