# Session 49, call a: LayerNorm's Welford kernel generalised to several rows a program (layer_norm.WELFORD_WIDE_ROWS,
# still 1): its GPU tests, exp_ln_rows.py (two rows a program at 24576-65536), exp_quant_onchip.py (rms_norm_fp8 on
# the on-chip kernel at other launch shapes).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 14 tests/test_layer_norm.py -p no:logging --tb=line 2>&1 | grep -v Warn \
  | tail -6 | tee $OUT/w/tests.log
timeout 200 python benchmarks/exp_ln_rows.py $OUT/w > $OUT/w/exp-ln-rows.log 2>&1
tail -30 $OUT/w/exp-ln-rows.log
timeout 150 python benchmarks/exp_quant_onchip.py $OUT/w > $OUT/w/exp-quant-onchip.log 2>&1
tail -24 $OUT/w/exp-quant-onchip.log
tar czf $OUT/call-a.tgz -C $OUT w
