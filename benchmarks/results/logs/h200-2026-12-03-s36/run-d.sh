# session 36, call d: call c's rms_norm GPU tests again (the Gluon tests with the reload kernel off; the reload
# kernel with a residual at its new widths, in place too)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest -q -p no:cacheprovider -n 6 tests/test_rms_norm.py -k "gpu" \
    > $OUT/tests/rms.txt 2>&1; echo "rms tests rc $?: $(tail -1 $OUT/tests/rms.txt)"
grep -h "^FAILED" $OUT/tests/*.txt | cut -c1-200
