# Session 50, call e: the int4 and int8 results rows at batch 64 and 256 with quant_matmul's Gluon kernels launched as
# programmatic dependents (rooftop and cuBLAS in one run, tuned anew; matmul's PDL_KERNELS now empty).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 480 python benchmarks/gpu_session.py $OUT/w/results --families quant_matmul \
  --ops quant_matmul_int4,quant_matmul_int8 --leading 64,256 --providers rooftop,cublas --no-ncu 2>&1 | tail -40 \
  | tee $OUT/w/session-quant.log
tar czf $OUT/call-e.tgz -C $OUT w
