# session 24, call 2: AHEAD (a group's word rows tied, all loaded before the first FMA): every M = 1 X_ASM candidate
# alone with the AHEAD variants, int4 and int8; then the GEMV's GPU tests (x_asm / slices with AHEAD, and those not
# re-run after session 23's fix)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
for b in 4 8; do
  timeout 170 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 130 --where X_ASM --gemv-variants > $OUT/exp-tuner-timing-ahead-int$b.log 2>&1
  grep truth $OUT/exp-tuner-timing-ahead-int$b.log | grep -v "mma\|'UNROLL': False" | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/'BLOCK_N': 128, //; s/'num_warps': 4, 'STAGES': 1, 'SLICES': 4, 'X_ASM': True, 'UNROLL': True, //; s/ +zero.*err [^ ]+//" | cut -c1-120
  tail -4 $OUT/exp-tuner-timing-ahead-int$b.log | cut -c1-100
done
mkdir -p $OUT/tests
timeout 150 python -m pytest tests/test_quant_matmul.py -q -k "x_asm or slices or plan_reuse or mma_gemv" -p no:cacheprovider -rf > $OUT/tests/gemv.txt 2>&1
tail -1 $OUT/tests/gemv.txt; grep "^FAILED" $OUT/tests/gemv.txt | head -5
