# Session 52, call e: matmul + residual at K = 4096 with every tuner candidate forced (exp_gemm_bursts --candidates):
# call d had the fused kernel 3-11% behind cuBLAS alone there (the epilogue's cost); does any candidate do better?
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_residual --rounds 4 --candidates \
  --providers cublas,eager,cublas_alone --cases 4096x4096x4096,2048x4096x4096 2>&1 | grep -v Warn > $OUT/w/exp-residual-candidates.log
tail -50 $OUT/w/exp-residual-candidates.log
tar czf $OUT/call-e.tgz -C $OUT w
