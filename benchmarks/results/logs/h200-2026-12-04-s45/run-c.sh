# Session 45, call c: quantizing rows without a residual whole to 65536 on 8-warp consumers (rms_norm.QUANT_WHOLE_MAX_N,
# QUANT_WIDE_WARPS; call b's w8_p64k): GPU tests of the norms; 40960-65536 against whole rows on 4 warps and parts of
# 32768 (exp_quant_norm_rows.py); the quantized norms' results rows (the kept reads lean since call a).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 170 python -m pytest -q -n 8 tests/test_rms_norm.py tests/test_split_rows.py tests/test_layer_norm.py \
  -k "not slow" 2>&1 | tail -6 | tee $OUT/w/tests-norms.log
timeout 120 python benchmarks/exp_quant_norm_rows.py $OUT/w > $OUT/w/exp-quant-norm-rows.log 2>&1
tail -8 $OUT/w/exp-quant-norm-rows.log
timeout 280 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm --ops rms_norm_fp8,add_rms_norm_fp8 \
  --no-ncu > $OUT/w/session-quant-norms.log 2>&1; grep -E "^(add_)?rms_norm_fp8 .*GB/s" $OUT/w/session-quant-norms.log \
  | head -40; tail -3 $OUT/w/session-quant-norms.log
tar czf $OUT/call-c.tgz -C $OUT w
