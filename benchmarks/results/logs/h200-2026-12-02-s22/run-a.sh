# session 22, call 1: the GEMV with x loaded by inline PTX (X_ASM): GPU tests, then the M = 1 candidates alone
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest tests/test_quant_matmul.py -q -k "x_asm or slices or split or gemv or plan" -p no:cacheprovider -rf > $OUT/tests/x-asm.txt 2>&1
tail -3 $OUT/tests/x-asm.txt; grep "^FAILED" $OUT/tests/x-asm.txt | head -5
for b in 4 8; do
  timeout 210 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 170 --where X_ASM,SLICES > $OUT/exp-tuner-timing-xasm-int$b.log 2>&1
  grep truth $OUT/exp-tuner-timing-xasm-int$b.log | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/ +zero.*err [^ ]+//" | cut -c1-170
  tail -4 $OUT/exp-tuner-timing-xasm-int$b.log | cut -c1-120
done
