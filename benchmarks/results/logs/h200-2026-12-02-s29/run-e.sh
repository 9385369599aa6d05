# session 29, call e: GPU tests after the last changes (lengths clamped, replays): decode_attention (not slow),
# test_cli (rooftop check over every registered op's check cases), test_compile, test_plans
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES="tests/test_decode_attention.py tests/test_cli.py tests/test_compile.py tests/test_plans.py" \
    bash benchmarks/gpu_tests.sh "not slow" 330
