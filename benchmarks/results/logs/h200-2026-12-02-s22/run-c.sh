# session 22, call 3: GPU tests of quant_matmul's Triton paths, then the quant_matmul results (tuned from an empty cache)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 140 python -m pytest tests/test_quant_matmul.py -q -m "not slow" -k "not gluon" -p no:cacheprovider --maxfail=10 -rf > $OUT/tests/quant.txt 2>&1
tail -2 $OUT/tests/quant.txt; grep "^FAILED" $OUT/tests/quant.txt | head -5
timeout 420 python benchmarks/gpu_session.py $OUT --families quant_matmul --no-ncu > $OUT/session-quant.log 2>&1
grep "graph" $OUT/session-quant.log | grep " 1x\| 16x" | sed -E 's/ +\|.*//' | cut -c1-150
tar czf $OUT/tuner-cache.tgz -C /tmp/cache .
