# Session 47: rms_norm.PART_MAX_N 32768 and norm_sm90.PARTS_RESIDUAL_MIN_N 65536 (call c): the split-rows / rms_norm /
# layer_norm GPU tests, the results rows of rms_norm / add_rms_norm / add_layer_norm at 131072 / 262144, and rows with
# a residual at 65536 in parts (exp_norm_parts.py --65536).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python -m pytest -q -n 12 tests/test_split_rows.py tests/test_rms_norm.py tests/test_layer_norm.py \
  -p no:logging 2>&1 | grep -E "passed|failed|FAILED|Error" | tail -12 | tee $OUT/w/tests.log
timeout 150 python benchmarks/gpu_session.py $OUT/w/session --families rms_norm,layer_norm \
  --ops rms_norm,add_rms_norm,add_layer_norm --widths 131072,262144 --no-ncu > $OUT/w/session.log 2>&1
grep -E "GB/s" $OUT/w/session.log
timeout 100 python benchmarks/exp_norm_parts.py $OUT/w --65536 > $OUT/w/exp-norm-parts.log 2>&1
tail -3 $OUT/w/exp-norm-parts.log
tar czf $OUT/call-d.tgz -C $OUT w
