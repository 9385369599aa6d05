# session 22, call 5: the int4 quant_matmul results with the UNROLL candidates (tuned from an empty cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 330 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int4 --no-ncu > $OUT/session-quant-int4.log 2>&1
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150
tar czf $OUT/tuner-cache-int4.tgz -C /tmp/cache .
