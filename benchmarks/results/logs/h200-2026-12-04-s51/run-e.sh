# Session 51, call e: the quant_matmul results rows at batch 64 and 256 with the providers' graphs timed in
# alternating bursts (sweep.measure now), rooftop and cuBLAS, tuned from an empty cache.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 480 python benchmarks/gpu_session.py $OUT/w/session --families quant_matmul \
  --ops quant_matmul_int4,quant_matmul_int8 --leading 64,256 --providers rooftop,cublas --no-ncu 2>&1 | grep -v Warn \
  > $OUT/w/session-quant.log
tail -20 $OUT/w/session-quant.log
tar czf $OUT/call-e.tgz -C $OUT w
