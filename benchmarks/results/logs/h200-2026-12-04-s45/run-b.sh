# Session 45, call b: the Gluon norm kernel's consumer partitions of 8 warps for quantizing rows (exp_quant_norm_rows.py:
# rms_norm_fp8 at 8192-262144, add_rms_norm_fp8 at 16384-131072; past 32768 also parts of 65536 on 8 warps).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 330 python benchmarks/exp_quant_norm_rows.py $OUT/w > $OUT/w/exp-quant-norm-rows.log 2>&1
tail -11 $OUT/w/exp-quant-norm-rows.log
tar czf $OUT/call-b.tgz -C $OUT w
