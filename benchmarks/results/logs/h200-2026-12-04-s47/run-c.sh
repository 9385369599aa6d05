# Session 47: the norms in parts (benchmarks/exp_norm_parts.py): rms_norm's parts of 32768, rows with a residual in
# parts below norm_sm90.PARTS_RESIDUAL_MIN_N against the split-words kernels (add_rms_norm, add_layer_norm at 131072 /
# 262144), add_rms_norm's parts at 524288 by width.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 300 python benchmarks/exp_norm_parts.py $OUT/w > $OUT/w/exp-norm-parts.log 2>&1; tail -9 $OUT/w/exp-norm-parts.log
tar czf $OUT/call-c.tgz -C $OUT w
