# Session 47 (after the review): the experiments that now share exp_row_tail.time_cases, run once each as they are
# (exp_norm_parts: the choices the library left, parts of 65536 and the split-words kernels; exp_ln_warps at
# 49152-65536; softmax's parts on 4096-element chunks again).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python benchmarks/exp_norm_parts.py $OUT/w > $OUT/w/exp-norm-parts.log 2>&1; tail -8 $OUT/w/exp-norm-parts.log
timeout 80 python benchmarks/exp_ln_warps.py $OUT/w > $OUT/w/exp-ln-warps.log 2>&1; tail -4 $OUT/w/exp-ln-warps.log
timeout 100 python benchmarks/exp_softmax_part_warps.py $OUT/w --chunks > $OUT/w/exp-chunks.log 2>&1
tail -5 $OUT/w/exp-chunks.log
tar czf $OUT/call-h.tgz -C $OUT w
