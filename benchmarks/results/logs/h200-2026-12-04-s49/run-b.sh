# Session 49, call b: rms_norm's quantizing rows without a residual on chip at 32 values a thread
# (rms_norm.QUANT_ONCHIP_ELEMS_PER_THREAD): the rms_norm GPU tests, exp_quant_onchip.py at the narrow widths, the
# results rows of rms_norm_fp8 to 8192, and the reductions' rows at 65536 again (issue 3's 90 there).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 14 tests/test_rms_norm.py -p no:logging --tb=line 2>&1 | grep -v Warn \
  | tail -6 | tee $OUT/w/tests.log
timeout 150 python benchmarks/exp_quant_onchip.py $OUT/w > $OUT/w/exp-quant-onchip-b.log 2>&1
tail -8 $OUT/w/exp-quant-onchip-b.log
timeout 120 python benchmarks/gpu_session.py $OUT/w/session-fp8 --families rms_norm --ops rms_norm_fp8 \
  --widths 512,1024,2048,4096,8192 --no-ncu > $OUT/w/session-fp8.log 2>&1
grep -E "GB/s" $OUT/w/session-fp8.log | head -20
timeout 120 python benchmarks/gpu_session.py $OUT/w/session-red --families reductions \
  --ops row_sum,row_max,row_mean,row_norm --widths 65536 --no-ncu > $OUT/w/session-red.log 2>&1
grep -E "GB/s" $OUT/w/session-red.log | head -20
tar czf $OUT/call-b.tgz -C $OUT w
