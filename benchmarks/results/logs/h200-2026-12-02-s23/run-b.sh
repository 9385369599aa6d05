# session 23, call 2: GPU tests of quant_matmul (GROUP_SUMS only where a slice is one warp of >= 128 columns; new
# M = 1 candidates: one wave at 28672 x 8192, 64 / 56 registers), then the int4 results tuned from an empty cache
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 170 python -m pytest tests/test_quant_matmul.py -q -m "not slow" -k "not gluon" -p no:cacheprovider -rf > $OUT/tests/quant.txt 2>&1
tail -1 $OUT/tests/quant.txt; grep "^FAILED" $OUT/tests/quant.txt | head -5
timeout 330 python benchmarks/gpu_session.py $OUT --families quant_matmul --ops quant_matmul_int4 --no-ncu > $OUT/session-quant-int4.log 2>&1
grep "graph" $OUT/session-quant-int4.log | sed -E 's/ +\|.*//' | cut -c1-150
tar czf $OUT/tuner-cache-int4.tgz -C /tmp/cache .
