# session 23, call 1: the M = 1 GEMV's instruction diet (EVEN, W_STRIDE, x sums by shuffles, int8 by PRMT):
# GPU tests, then every M = 1 candidate with X_ASM alone (and the untimed default)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 120 python -m pytest tests/test_quant_matmul.py -q -k "x_asm or slices or gemv" -p no:cacheprovider -rf > $OUT/tests/diet.txt 2>&1
tail -2 $OUT/tests/diet.txt; grep "^FAILED" $OUT/tests/diet.txt | head -5
for b in 4 8; do
  timeout 200 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 160 --where X_ASM > $OUT/exp-tuner-timing-diet-int$b.log 2>&1
  grep truth $OUT/exp-tuner-timing-diet-int$b.log | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/ +zero.*err [^ ]+//; s/'STAGES': 1, //" | cut -c1-160
  tail -4 $OUT/exp-tuner-timing-diet-int$b.log | cut -c1-110
done
