# Session 46, call h: the Gluon GPU tests of softmax and the norms on the final code (exchange_pairs and the
# QUICK_EXCHANGE switch removed: swap_pairs the only exchange of rows in parts), and test_split_rows.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 10 tests/test_softmax.py tests/test_rms_norm.py tests/test_layer_norm.py \
  tests/test_split_rows.py -k "gluon or parts or split" -p no:logging 2>&1 | tail -4 | tee $OUT/w/tests-gluon.log
tar czf $OUT/call-h.tgz -C $OUT w
