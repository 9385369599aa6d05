# Session 44, call e: quantizing RMSNorm without a residual at 1024-32768 (call d's new results rows: 69-86%):
# the on-chip kernel with both statistics in one phase, more warps, the Gluon kernel from 1024, on chip to 32768.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 330 python benchmarks/exp_quant_norm_rows.py $OUT/w > $OUT/w/exp-quant-norm-rows.log 2>&1
tail -13 $OUT/w/exp-quant-norm-rows.log
tar czf $OUT/call-e.tgz -C $OUT w
