# Session 49, call i: the GPU tests of the norms' files, the split rows, compile and integrations on the final code
# (norm_sm90.RESIDENT_ONE).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 280 python -m pytest -q -n 14 tests/test_layer_norm.py tests/test_rms_norm.py tests/test_split_rows.py \
  tests/test_compile.py tests/test_integrations.py -p no:logging --tb=short 2>&1 | grep -v Warn | tail -25 \
  | tee $OUT/w/tests.log
