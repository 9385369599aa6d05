# session 31, call a: the GPU tests left from session 30 (test_profile, test_cli's profile tests, test_decode_attention
# after the c548ca1 mend); decode_attention's split count against short sequences (probe_decode_splits.py)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES="tests/test_profile.py tests/test_decode_attention.py" bash benchmarks/gpu_tests.sh "not slow" 200
timeout 150 python -m pytest tests/test_cli.py -q -k profile -p no:cacheprovider -rf > $OUT/tests/test_cli_profile.txt 2>&1
echo "test_cli -k profile rc $?: $(tail -1 $OUT/tests/test_cli_profile.txt)"
timeout 200 python benchmarks/probe_decode_splits.py $OUT > $OUT/probe-decode-splits.log 2>&1
echo "probe rc $?"; grep -v "Warn\|warn" $OUT/probe-decode-splits.log | tail -30 | cut -c1-200
