# Session 48: call a found the ring reduction at ~88.5% of a same-run copy at every width, the Triton paths 90-93.
# Variants of its consumer: chunks waited for / released BATCH at a time, no proxy fence, 2 or 8 warps; the Gluon
# tests again (call a's failures: a test's bf16 bound, the on-chip test now reaching Gluon).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 12 tests/test_reductions.py -p no:logging --tb=line -k "gluon or one_program" 2>&1 \
  | tail -25 | tee $OUT/w/tests.log
timeout 300 python benchmarks/exp_reductions_gluon.py $OUT/w > $OUT/w/exp-reductions-gluon.log 2>&1
tail -8 $OUT/w/exp-reductions-gluon.log
tar czf $OUT/call-b.tgz -C $OUT w
