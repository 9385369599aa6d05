# Session 44, call d: the Gluon norm kernel with the weight kept in shared memory where x's ring holds two rows (on by
# default now): the Gluon norm GPU tests; results rows for the quantized norms (rms_norm_fp8 new, add_rms_norm_fp8).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_rms_norm.py tests/test_layer_norm.py tests/test_split_rows.py \
  -k "gluon or resident or registry or quantized or parts" 2>&1 | tail -6 | tee $OUT/w/tests-norms.log
timeout 400 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm --ops rms_norm_fp8,add_rms_norm_fp8 \
  --no-ncu > $OUT/w/session-quant-norms.log 2>&1; tail -24 $OUT/w/session-quant-norms.log
tar czf $OUT/call-d.tgz -C $OUT w
