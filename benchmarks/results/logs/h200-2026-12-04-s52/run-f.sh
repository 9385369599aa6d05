# Session 52, call f: the plain GEMM beside cuBLAS at call d's K = 4096 shapes (is the gap to cuBLAS alone the
# epilogue's?), then matmul + residual again without candidates (run-to-run spread of call d's figures).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
C=4096x4096x4096,2048x4096x4096,2048x2048x2048,8192x4096x4096
timeout 100 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul --rounds 6 --cases $C 2>&1 | grep -v Warn \
  > $OUT/w/exp-matmul.log
timeout 100 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_residual --rounds 6 --cases $C \
  --providers cublas,eager,cublas_alone 2>&1 | grep -v Warn > $OUT/w/exp-residual-2.log
tail -6 $OUT/w/exp-matmul.log
tail -22 $OUT/w/exp-residual-2.log
tar czf $OUT/call-f.tgz -C $OUT w
