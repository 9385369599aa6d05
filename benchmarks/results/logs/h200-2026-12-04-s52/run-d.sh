# Session 52, call d: issue 4's fused epilogues (matmul + bias + SiLU, matmul + residual; >= 1.1x "cuBLAS followed by
# the eager epilogue" asked) in alternating graph bursts (exp_gemm_bursts.py --op): rooftop, the registry's cuBLAS
# peer, eager (torch.matmul then the epilogue as torch ops) and cuBLAS alone (no epilogue: the bound at parity). Then
# a one-case results session (its file now written after each case too) with the quick pytest of the harness.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
P=cublas,eager,cublas_alone
timeout 180 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_bias_silu --rounds 6 --providers $P \
  --cases 4096x4096x4096,8192x8192x8192,2048x14336x4096,2048x2048x2048,512x28672x4096,2048x28672x4096 2>&1 \
  | grep -v Warn > $OUT/w/exp-bias-silu.log
timeout 200 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_residual --rounds 6 --providers $P \
  --cases 4096x4096x4096,8192x8192x8192,2048x14336x4096,2048x2048x2048,2048x4096x4096,512x4096x4096,8192x4096x4096,2048x8192x8192 \
  2>&1 | grep -v Warn > $OUT/w/exp-residual.log
timeout 60 python benchmarks/gpu_session.py $OUT/w/session --families softmax --ops softmax --widths 4096 \
  --providers rooftop,eager --no-ncu 2>&1 | grep -v Warn | tail -4
timeout 45 python -m pytest -q tests/test_bench.py tests/test_report.py -p no:logging --tb=line 2>&1 | tail -2
tail -32 $OUT/w/exp-bias-silu.log
tail -40 $OUT/w/exp-residual.log
tar czf $OUT/call-d.tgz -C $OUT w
