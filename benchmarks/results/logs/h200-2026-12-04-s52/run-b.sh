# Session 52, call b: call a's session ran out of its 330 s in the int4 rows (tuning batch 1 / 16 from an empty
# cache takes ~5 min an op). The int4 rows at batch 1 and 16 alone (rooftop, cuBLAS, tinygemm).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 500 python benchmarks/gpu_session.py $OUT/w/session --families quant_matmul \
  --ops quant_matmul_int4 --leading 1,16 --providers rooftop,cublas,tinygemm --no-ncu 2>&1 \
  | grep -v Warn > $OUT/w/session-quant-int4.log
tail -14 $OUT/w/session-quant-int4.log
tar czf $OUT/call-b.tgz -C $OUT w
