# Session 46, call d: softmax parts exchanging their statistics in one round trip (softmax_sm90.swap_pairs,
# QUICK_EXCHANGE): the Gluon softmax GPU tests, then benchmarks/exp_softmax_exchange.py (A/B against exchange_pairs).
set -x
# (benchmarks/exp_softmax_exchange.py is benchmarks/exp_part_exchange.py since, with the norms' cases.)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_softmax.py -k "gluon" -p no:logging 2>&1 | tail -15 \
  | tee $OUT/w/tests-softmax.log
timeout 300 python benchmarks/exp_softmax_exchange.py $OUT/w > $OUT/w/exp-softmax-exchange.log 2>&1
echo rc=$?
tail -8 $OUT/w/exp-softmax-exchange.log
tar czf $OUT/call-d.tgz -C $OUT w
