# Session 43, call d: the int8 results rows at batch 16, 64 and 256 with the final code (the swap-AB kernel's int8
# register path and the int8 Gluon variants among the candidates), rooftop and cuBLAS in one run, tuned anew.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 400 python benchmarks/gpu_session.py $OUT/w/results --families quant_matmul --ops quant_matmul_int8 \
  --leading 16,64,256 --providers rooftop,cublas --no-ncu 2>&1 | tail -40 | tee $OUT/w/session-int8.log
tar czf $OUT/call-d.tgz -C $OUT w
