# Session 46, call f: quantizing RMSNorm rows without a residual in parts past 57344 (rms_norm.QUANT_WHOLE_MAX_N, call
# e): its Gluon GPU tests; exp_part_exchange.py --wide-quant (whole rows against parts of 32768 at 40960-65536); the
# results rows of softmax / log_softmax at 131072 / 262144 and of the quantizing norms from 65536 (swap_pairs).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 100 python -m pytest -q -n 8 tests/test_rms_norm.py -k "gluon or quant" -p no:logging 2>&1 | tail -4 \
  | tee $OUT/w/tests-rms.log
timeout 100 python benchmarks/exp_part_exchange.py $OUT/w --wide-quant > $OUT/w/exp-wide-quant.log 2>&1
tail -5 $OUT/w/exp-wide-quant.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session-sm --families softmax --ops softmax,log_softmax \
  --widths 131072,262144 --no-ncu > $OUT/w/session-sm.log 2>&1; grep -E "GB/s" $OUT/w/session-sm.log
timeout 200 python benchmarks/gpu_session.py $OUT/w/session-rms --families rms_norm --ops rms_norm_fp8,add_rms_norm_fp8 \
  --widths 65536,131072,262144 --no-ncu > $OUT/w/session-rms.log 2>&1; grep -E "GB/s" $OUT/w/session-rms.log
tar czf $OUT/call-f.tgz -C $OUT w
