# Session 45, call e: Nsight Compute of the mma GEMV at M = 16 x 28672 x 8192 with programs of 1, 4 and 8 warps
# (NOTES item 280: do the warps of a program share x's loads in L1? L2 -> L1 sectors and L1 hit rate).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,launch__registers_per_thread,launch__grid_size
for W in 1 4 8; do
  timeout 100 ncu --kernel-name regex:_qgemv_mma --launch-skip 1 --launch-count 1 --metrics $METRICS \
    python benchmarks/exp_tuner_timing.py --ncu-target 16 --ncu-warps $W > $OUT/w/ncu-mma-m16-w$W.txt 2>&1
  echo "== $W warps"; grep -E "duration|bytes_read|sectors|hit_rate|warps_active|requests|registers|grid_size" \
    $OUT/w/ncu-mma-m16-w$W.txt
done
tar czf $OUT/call-e.tgz -C $OUT w
