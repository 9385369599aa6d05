# Session 48: the reductions' pieces (call e: pieces of 16384 on 32 warps 69-77%, of 32768 91.6-93.4 but row_max 77-79)
# with fewer warps a piece (more programs an SM to hide the counter's round trip), and max by one NaN-keeping reduce.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 250 python benchmarks/exp_reduce_pieces.py $OUT/w > $OUT/w/exp-reduce-pieces.log 2>&1
tail -8 $OUT/w/exp-reduce-pieces.log
tar czf $OUT/call-f.tgz -C $OUT w
