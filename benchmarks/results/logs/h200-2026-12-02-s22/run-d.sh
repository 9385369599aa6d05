# session 22, call 4: the sliced GEMV with a group's k-steps unrolled (UNROLL): GPU tests, then the M = 1 candidates alone
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 100 python -m pytest tests/test_quant_matmul.py -q -k "x_asm or slices" -p no:cacheprovider -rf > $OUT/tests/unroll.txt 2>&1
tail -2 $OUT/tests/unroll.txt; grep "^FAILED" $OUT/tests/unroll.txt | head -5
for b in 4 8; do
  timeout 170 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 140 --where X_ASM > $OUT/exp-tuner-timing-unroll-int$b.log 2>&1
  grep truth $OUT/exp-tuner-timing-unroll-int$b.log | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/ +zero.*err [^ ]+//; s/'STAGES': 1, //" | cut -c1-160
  tail -4 $OUT/exp-tuner-timing-unroll-int$b.log | cut -c1-110
done
