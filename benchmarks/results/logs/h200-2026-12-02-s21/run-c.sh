# session 21, call 3: the mma GEMV with L2 prefetch (L2_AHEAD groups), GPU tests then timings
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest tests/test_quant_matmul.py -q -k "mma" -p no:cacheprovider -rf > $OUT/tests/mma.txt 2>&1
tail -3 $OUT/tests/mma.txt
timeout 330 python benchmarks/exp_tuner_timing.py $OUT --ms 1,16 --only-mma --budget 280 2>&1 | tee $OUT/exp-tuner-timing-l2.log | tail -12
