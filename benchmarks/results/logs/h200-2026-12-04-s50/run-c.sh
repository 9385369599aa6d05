# Session 50, call c: exp_gemm_pdl.py for matmul at M = 512 (the Llama-3 prefill shapes; PDL on / off / on, cuBLAS).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 400 python benchmarks/exp_gemm_pdl.py $OUT/w --matmul-m 512 --quant-m none 2>&1 | grep -v Warn \
  > $OUT/w/exp-gemm-pdl-matmul.log
tail -12 $OUT/w/exp-gemm-pdl-matmul.log
tar czf $OUT/call-c.tgz -C $OUT w
