# session 21, call 4: the batch-1 GEMV's fix-up (exp_gemv_tail, library then the no-fix-up probe), mma GEMV 4-warp tiles
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 200 python benchmarks/exp_gemv_tail.py $OUT 2>&1 | tee $OUT/exp-gemv-tail.log
timeout 200 python benchmarks/exp_gemv_tail.py $OUT --probe 2>&1 | tee $OUT/exp-gemv-tail-probe.log
timeout 150 python benchmarks/exp_tuner_timing.py $OUT --ms 1 --only-mma --budget 120 2>&1 > $OUT/exp-tuner-timing-w4.log
grep "truth" $OUT/exp-tuner-timing-w4.log | awk '{print $1, $2, $4, $17, $18, $19, $20, $21, $22, $23, $24}'
