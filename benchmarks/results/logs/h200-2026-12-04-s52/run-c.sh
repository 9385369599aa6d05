# Session 52, call c: the int8 rows at batch 1 (the issue asks 1.8x cuBLAS there), rooftop and cuBLAS.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 420 python benchmarks/gpu_session.py $OUT/w/session --families quant_matmul \
  --ops quant_matmul_int8 --leading 1 --providers rooftop,cublas --no-ncu 2>&1 \
  | grep -v Warn > $OUT/w/session-quant-int8.log
tail -14 $OUT/w/session-quant-int8.log
tar czf $OUT/call-c.tgz -C $OUT w
