# session 29, call d: decode_attention with BLOCK_N 128 (call c's pick): GPU tests (not slow), then the family's
# sweep with every provider, its static-cache table and a Nsight Compute reading (the results file of the report)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES=tests/test_decode_attention.py bash benchmarks/gpu_tests.sh "not slow" 110
timeout 400 python benchmarks/gpu_session.py $OUT/results --families decode_attention > $OUT/session.log 2>&1
echo "rc $?"; grep -v "Warn\|warn\|return F\|^ *$" $OUT/session.log | tail -30 | cut -c1-200
