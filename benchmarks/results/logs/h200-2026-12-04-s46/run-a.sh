# Session 46, call a: LayerNorm's whole rows past 40960 on 8-warp consumers (session 45's run-i: the Gluon LayerNorm
# GPU tests, the layer_norm results row at 65536); Nsight Compute PC sampling of softmax in parts at 131072.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
bash benchmarks/results/logs/h200-2026-12-04-s45/run-i.sh
timeout 200 python benchmarks/ncu_pc_sampling.py $OUT/w/ncu softmax_131072 > $OUT/w/ncu.log 2>&1
tail -30 $OUT/w/ncu.log
grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible" \
  $OUT/w/ncu/details-softmax_131072.txt | head -12
tar czf $OUT/call-a.tgz -C $OUT w
