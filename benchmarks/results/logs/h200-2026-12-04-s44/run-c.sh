# Session 44, call c: quantizing RMSNorm with the weight kept in shared memory, timed right this time (call b timed
# the dequantization too); the wide on-chip reductions one program an SM: GPU tests, results rows at 65536.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_reductions.py 2>&1 | tail -4 | tee $OUT/w/tests-reductions.log
timeout 200 python benchmarks/exp_resident_params.py $OUT/w > $OUT/w/exp-resident.log 2>&1; tail -11 $OUT/w/exp-resident.log
timeout 200 python benchmarks/gpu_session.py $OUT/w/session --families reductions --widths 65536 --no-ncu \
  > $OUT/w/session-reductions.log 2>&1; tail -12 $OUT/w/session-reductions.log
tar czf $OUT/call-c.tgz -C $OUT w
