# Session 44, call b: the Gluon norm kernel with its weight and bias kept in shared memory (norm_sm90.RESIDENT_PARAMS):
# GPU tests (the new ones and the Gluon norm tests as they were), timed against the library; the on-chip reductions
# one program an SM again (a second sample of call a's +0.5-2%).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 8 tests/test_rms_norm.py tests/test_layer_norm.py -k "gluon or resident" 2>&1 \
  | tail -15 | tee $OUT/w/tests-resident.log
timeout 280 python benchmarks/exp_resident_params.py $OUT/w > $OUT/w/exp-resident.log 2>&1; tail -16 $OUT/w/exp-resident.log
timeout 90 python benchmarks/exp_rows_one_program.py $OUT/w > $OUT/w/exp-rows.log 2>&1; tail -10 $OUT/w/exp-rows.log
tar czf $OUT/call-b.tgz -C $OUT w
