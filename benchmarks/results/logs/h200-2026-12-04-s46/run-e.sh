# Session 46, call e: swap_pairs in the norms' Gluon kernel too (QUICK_EXCHANGE): the Gluon GPU tests of softmax and
# the norms, then benchmarks/exp_part_exchange.py (A/B against exchange_pairs; parts of 32768 at 65536).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 8 tests/test_softmax.py tests/test_rms_norm.py tests/test_layer_norm.py -k "gluon" \
  -p no:logging 2>&1 | tail -15 | tee $OUT/w/tests-gluon.log
timeout 330 python benchmarks/exp_part_exchange.py $OUT/w > $OUT/w/exp-part-exchange.log 2>&1
echo rc=$?
tail -16 $OUT/w/exp-part-exchange.log
tar czf $OUT/call-e.tgz -C $OUT w
