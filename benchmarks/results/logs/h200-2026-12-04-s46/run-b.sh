# Session 46, call b: softmax rows in parts whose consumers write a part after folding the next (softmax_sm90 DEFER;
# benchmarks/exp_softmax_defer.py), against the library's parts.
# (DEFER and benchmarks/exp_softmax_defer.py are at commit 6757876; reverted after this call: they lost, NOTES item 297.)
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 400 python benchmarks/exp_softmax_defer.py $OUT/w > $OUT/w/exp-softmax-defer.log 2>&1
echo rc=$?
tail -8 $OUT/w/exp-softmax-defer.log
tar czf $OUT/call-b.tgz -C $OUT w
