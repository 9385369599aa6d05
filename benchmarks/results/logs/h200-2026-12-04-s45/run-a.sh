# Session 45, call a: the kept parameters' reads without Membar's partition barrier (NOTES item 286, branch
# resident-lean, now on main): GPU tests of the Gluon norm kernel; every resident case timed with the kernel as it is
# and as session 44 measured it (exp_resident_params.py --all, "_membar" rows).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_rms_norm.py tests/test_layer_norm.py -k "gluon or resident or quant" \
  2>&1 | tail -8 | tee $OUT/w/tests-resident.log
timeout 400 python benchmarks/exp_resident_params.py $OUT/w --all > $OUT/w/exp-resident.log 2>&1
tail -14 $OUT/w/exp-resident.log
tar czf $OUT/call-a.tgz -C $OUT w
