# session 25, call 2: the no-close GEMV variants (K over 8 / 16 warps of a program), int4 and int8, M = 1; then the
# kept candidate with no close at all (exp_gemv_tail --probe: wrong results, the reads and arithmetic alone)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
for b in 4 8; do
  timeout 160 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 120 --where X_ASM --gemv-variants > $OUT/variants-int$b.log 2>&1
  grep truth $OUT/variants-int$b.log | grep -v "mma\|'UNROLL': False" | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/'BLOCK_N': 128, //; s/'STAGES': 1, //; s/'X_ASM': True, 'UNROLL': True, //; s/ +zero.*err [^ ]+//" | cut -c1-130
  tail -4 $OUT/variants-int$b.log | cut -c1-100
done
timeout 170 python benchmarks/exp_gemv_tail.py $OUT --config '(128, 4, 4, 7, 1, 72, 4, True, True)' --probe > $OUT/tail-probe.log 2>&1; echo "rc $?"
grep ^int $OUT/tail-probe.log | cut -c1-60
