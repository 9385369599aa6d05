# Session 46, call i: softmax / log_softmax in parts by part width and consumer warps under swap_pairs
# (benchmarks/exp_softmax_part_warps.py; the choice made in session 45 under the old exchange).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_softmax_part_warps.py $OUT/w > $OUT/w/exp-softmax-part-warps.log 2>&1
echo rc=$?
tail -6 $OUT/w/exp-softmax-part-warps.log
tar czf $OUT/call-i.tgz -C $OUT w
