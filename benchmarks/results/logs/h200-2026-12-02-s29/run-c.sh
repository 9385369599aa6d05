# session 29, call c: decode_attention with its split count from the kernel's residency (one wave): GPU tests
# (not slow), launch parameters against SDPA
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES=tests/test_decode_attention.py bash benchmarks/gpu_tests.sh "not slow" 120
timeout 300 python benchmarks/exp_decode_attention.py $OUT > $OUT/exp-decode-attention.log 2>&1; echo "rc $?"
grep -v Warn $OUT/exp-decode-attention.log | grep -v "return F" | tail -12 | cut -c1-250
