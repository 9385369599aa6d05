# session 24, call 4: Nsight Compute (full set, PC sampling) of the kept int4 M = 1 GEMV at 14336 x 4096
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 170 python benchmarks/ncu_pc_sampling.py $OUT gemv_m1_mid > $OUT/ncu-gemv-m1-mid.log 2>&1; echo "rc $?"
grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Issued Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Warp Cycles Per Issued|No Eligible|L2 Hit Rate|L1/TEX Hit|Waves Per SM|Block Limit Registers)" $OUT/details-gemv_m1_mid.txt | cut -c1-100
tail -28 $OUT/ncu-gemv-m1-mid.log | cut -c1-130
rm -f $OUT/*.ncu-rep
