# session 26, call 2: the int4 results rows with PDL on the gemv, mma and dot paths (tuned from an empty cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 500 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int4 --no-ncu \
  > $OUT/session-quant-int4.log 2>&1; echo "rc $?"
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150
tail -2 $OUT/session-quant-int4.log | cut -c1-150
tar czf $OUT/tuner-cache-int4.tgz -C /tmp/cache .
