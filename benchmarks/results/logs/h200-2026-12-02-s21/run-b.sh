# session 21, call 2: Nsight Compute of the batch-1 / 16 GEMVs at 28672 x 8192 (the mma GEMV after the ones-MMA change)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
W=/tmp/ncu; mkdir -p $W
timeout 400 python benchmarks/ncu_pc_sampling.py $W gemv_m1,mma_m1,mma_m16 > $OUT/ncu-gemv.log 2>&1
for t in gemv_m1 mma_m1 mma_m16; do
  echo "== $t"; grep -E "DRAM Throughput|Memory Throughput|Duration|Issue Slots Busy|Issued Ipc|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|SM Frequency|DRAM Frequency|L2 Hit|Block Limit Reg|Waves Per SM" $W/details-$t.txt | head -24
  gzip -c $W/source-$t.csv > $OUT/ncu-source-$t.csv.gz; cp $W/details-$t.txt $OUT/ncu-details-$t.txt
done
grep -A26 "== " $OUT/ncu-gemv.log | grep "%" | head -80
