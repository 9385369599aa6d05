# Session 45, call f: softmax / log_softmax rows in parts (131072, 262144) on 8-warp consumers, parts of 65536 and
# 32768 (exp_softmax_part_warps.py).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/exp_softmax_part_warps.py $OUT/w > $OUT/w/exp-softmax-part-warps.log 2>&1
tail -6 $OUT/w/exp-softmax-part-warps.log
tar czf $OUT/call-f.tgz -C $OUT w
