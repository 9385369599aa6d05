# Session 44, call f: the final code: quantizing rows on chip with both statistics in one phase, the Gluon kernel past
# 4096 without a residual, the weight kept in shared memory: GPU tests of the norms; the quantized norms' results rows;
# the quantized rows past 32768 whole or in parts of 16384 (exp_quant_norm_rows.py).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -n 8 tests/test_rms_norm.py tests/test_split_rows.py tests/test_layer_norm.py \
  tests/test_compile.py tests/test_integrations.py -k "not slow" 2>&1 | tail -6 | tee $OUT/w/tests-norms.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm --ops rms_norm_fp8,add_rms_norm_fp8 \
  --no-ncu > $OUT/w/session-quant-norms.log 2>&1; grep -E "^(add_)?rms_norm_fp8 .*GB/s" $OUT/w/session-quant-norms.log
timeout 150 python benchmarks/exp_quant_norm_rows.py $OUT/w > $OUT/w/exp-quant-norm-rows.log 2>&1
tail -19 $OUT/w/exp-quant-norm-rows.log
tar czf $OUT/call-f.tgz -C $OUT w
