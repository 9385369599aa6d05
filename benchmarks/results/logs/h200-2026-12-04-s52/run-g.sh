# Session 52, call g: the Gluon GEMM's residual tile asked for RESIDUAL_LEAD k-steps before a segment's end (it
# waited at each tile's start for the previous tile's stores): the Gluon variant tests (a new case with several
# tiles a program), then matmul + residual in alternating bursts at call f's shapes (before, x cuBLAS alone: 0.972 /
# 0.968 / 0.878 / 0.934; x eager 1.095 / 1.087 / 1.119 / 1.049).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python -m pytest -q -n 8 tests/test_matmul.py -k "gluon or residual" -p no:logging --tb=short 2>&1 \
  | grep -v Warn > $OUT/w/gpu-tests-g.txt
tail -15 $OUT/w/gpu-tests-g.txt
timeout 100 python benchmarks/exp_gemm_bursts.py $OUT/w --op matmul_residual --rounds 6 \
  --cases 4096x4096x4096,2048x4096x4096,2048x2048x2048,8192x4096x4096 --providers cublas,eager,cublas_alone 2>&1 \
  | grep -v Warn > $OUT/w/exp-residual-lead.log
tail -22 $OUT/w/exp-residual-lead.log
tar czf $OUT/call-g.tgz -C $OUT w
