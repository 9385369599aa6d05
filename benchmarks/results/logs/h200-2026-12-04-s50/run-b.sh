# Session 50, call b: the GEMMs' kernels launched as programmatic dependents (matmul.PDL_KERNELS; quant_matmul's Gluon
# paths in PDL_PATHS): their GPU tests (PDL chains bit for bit, the Gluon variants), then exp_gemm_pdl.py for W4A16
# at batch 64 and 256 (PDL on / off / on, cuBLAS, graph replay over copies).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 230 python -m pytest -q -n 8 tests/test_matmul.py tests/test_quant_matmul.py -k "pdl or gluon or plan" \
  -p no:logging --tb=line 2>&1 | grep -v Warn | tail -25 > $OUT/w/tests-pdl.log
grep -E "passed|failed|FAILED|ERROR|Timeout" $OUT/w/tests-pdl.log | tail -12
timeout 320 python benchmarks/exp_gemm_pdl.py $OUT/w --matmul-m none --quant-m 64,256 2>&1 | grep -v Warn \
  > $OUT/w/exp-gemm-pdl-quant.log
tail -12 $OUT/w/exp-gemm-pdl-quant.log
tar czf $OUT/call-b.tgz -C $OUT w
