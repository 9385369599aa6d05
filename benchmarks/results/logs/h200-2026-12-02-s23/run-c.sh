# session 23, call 3: after the fix of EVEN's None mask in a tuple (SLICES 1 candidates did not compile in call 2):
# GPU tests of the GEMV, plans and graphs, then the int8 results tuned from an empty cache
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest tests/test_quant_matmul.py -q -m "not slow" -k "not gluon and (x_asm or slices or gemv or graph or plan or splits or compiles)" -p no:cacheprovider -rf > $OUT/tests/quant-gemv.txt 2>&1
tail -1 $OUT/tests/quant-gemv.txt; grep "^FAILED" $OUT/tests/quant-gemv.txt | head -5
timeout 300 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int8 --no-ncu > $OUT/session-quant-int8.log 2>&1
grep "graph" $OUT/session-quant-int8.log | sed -E 's/ +\|.*//' | cut -c1-150
grep -c "skipped" $OUT/session-quant-int8.log
tar czf $OUT/tuner-cache-int8.tgz -C /tmp/cache .
