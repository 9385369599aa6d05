# Prepared in session 54 (no machine lent): the register-A W4A16 kernel's 64-row tiles at M = 128 / 256, which no run
# ever timed (exp_gluon_quant_rs.py kept block_m >= M / 2). At 256 x 4096 x 4096 the data-parallel 64 x 128 variant
# makes 4 x 32 = 128 tiles, one wave on 132 SMs with no stream-K fix-up; its per-program work equals 64 x 14336 x
# 4096's (112 tiles, 64 k-steps: 30.0 us, NOTES item 137), where the library's pick at M = 256 ran 32.7 us (rs_m128n128,
# item 133; 0.70x cuBLAS by graph in the results). Predicted ~30 us there (~0.76x); no gain at 4096 x 14336 (224
# k-steps a tile) or 14336 x 4096 (448 tiles). If it wins: RS_M64_N128_DP into REGIMES' M > 64 list (tuner key bump).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_gluon_quant_rs.py $OUT/w --batches 128,256 --budget 170 \
  --shapes 4096x4096,4096x14336,14336x4096 \
  --variants rs_m64n128_s8,rs_m64n128_s8_sk,rs_m64n256_s6_sk,rs_m128n128_s6_sk,rs_m256n128_s4_sk 2>&1 \
  | grep -v Warn > $OUT/w/exp-quant-rs-m64-at-256.log
tail -30 $OUT/w/exp-quant-rs-m64-at-256.log
tar czf $OUT/call-d.tgz -C $OUT w
