# Session 46, call c: LayerNorm / add_layer_norm / quantizing RMSNorm rows on 8-warp consumers where the results miss
# (benchmarks/exp_ln_warps.py --wide: LayerNorm parts at 131072 / 262144, add_layer_norm 65536, rms_norm_fp8 parts);
# the bias_gelu results rows at 32768 / 65536 again (89.9% in the file, the issue asks 90).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 300 python benchmarks/exp_ln_warps.py $OUT/w --wide > $OUT/w/exp-ln-warps.log 2>&1
echo rc=$?
timeout 120 python benchmarks/gpu_session.py $OUT/w/session --families activations --ops bias_gelu \
  --widths 32768,65536 --no-ncu > $OUT/w/session-gelu.log 2>&1; grep -E "^bias_gelu .*GB/s" $OUT/w/session-gelu.log
tail -7 $OUT/w/exp-ln-warps.log
tar czf $OUT/call-c.tgz -C $OUT w
