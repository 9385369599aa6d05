# Session 44, call a: quantizing RMSNorm through the reload kernel (tests, then timed against the Gluon path), the
# on-chip reductions one program an SM, the mma GEMV at M = 16 with 4- and 8-warp programs, and Nsight Compute's
# L2 -> L1 sectors of the mma GEMV at M = 1 and 16 (is x's traffic from L2 what holds M = 16?).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -n 8 tests/test_rms_norm.py -k "reload" 2>&1 | tail -6 | tee $OUT/w/tests-reload.log
timeout 200 python benchmarks/exp_rows_one_program.py $OUT/w > $OUT/w/exp-rows.log 2>&1; tail -16 $OUT/w/exp-rows.log
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active
for M in 1 16; do
  timeout 90 ncu --kernel-name regex:_qgemv_mma --launch-skip 1 --launch-count 1 --metrics $METRICS \
    python benchmarks/exp_tuner_timing.py --ncu-target $M > $OUT/w/ncu-mma-m$M.txt 2>&1
  grep -E "duration|bytes_read|sectors|hit_rate|warps_active" $OUT/w/ncu-mma-m$M.txt
done
timeout 200 python benchmarks/exp_tuner_timing.py $OUT/w --ms 16 --only-mma --budget 140 > $OUT/w/exp-mma16.log 2>&1
tail -14 $OUT/w/exp-mma16.log
tar czf $OUT/call-a.tgz -C $OUT w
