export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
ROOFTOP_AUTOTUNE=0 PYTEST_ADDOPTS="-k gluon" FILES=tests/test_quant_matmul.py bash benchmarks/gpu_tests.sh "not slow" 240 > $OUT/gpu-tests-quant-fixup.log 2>&1
cp $OUT/tests/test_quant_matmul.txt $OUT/gpu-tests-quant-fixup.txt; rm -rf $OUT/tests
python benchmarks/exp_gluon_quant_rs.py $W/sk --batches 64,256,16 --budget 200 > $OUT/exp-quant-fixup.log 2>&1
cp $W/sk/exp-gluon-quant-rs.json $OUT/exp-quant-fixup.json
cat $OUT/gpu-tests-quant-fixup.log; grep -v "^{" $OUT/exp-quant-fixup.log | tail -30
