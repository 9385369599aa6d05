# session 27, call 1: the int4 results rows with PDL (gemv, mma, dot) and the tuner timing M <= 16 in a chain
# (tuned from an empty cache; session 26's call-d was cut at the end of this sweep)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 570 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int4 --no-ncu \
  > $OUT/session-quant-int4.log 2>&1; echo "rc $?"
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150
tail -2 $OUT/session-quant-int4.log | cut -c1-150
tar czf $OUT/tuner-cache-int4.tgz -C /tmp/cache .
