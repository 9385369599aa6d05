# Session 49, call d: LayerNorm's Gluon rows two a consumer's turn (norm_sm90.PAIRED_ROWS, off in the library): the
# Gluon LayerNorm GPU tests with pairs on and off, exp_ln_pairs.py.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 240 python -m pytest -q -n 14 tests/test_layer_norm.py -k "gluon" -p no:logging --tb=short 2>&1 \
  | grep -v Warn | tail -30 | tee $OUT/w/tests.log
timeout 200 python benchmarks/exp_ln_pairs.py $OUT/w > $OUT/w/exp-ln-pairs.log 2>&1
tail -6 $OUT/w/exp-ln-pairs.log
tar czf $OUT/call-d.tgz -C $OUT w
