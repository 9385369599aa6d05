# session 24, call 1: the Gluon GEMV (TMA ring, never run before), then the M = 1 int4 candidates alone with the
# cp.async-pipelined variants (--gemv-variants)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 320 python benchmarks/exp_gluon_gemv.py $OUT > $OUT/exp-gluon-gemv.log 2>&1; echo "gluon rc $?"
tail -45 $OUT/exp-gluon-gemv.log | cut -c1-150
timeout 200 python benchmarks/exp_tuner_timing.py $OUT/b4 --ms 1 --bits 4 --budget 160 --where X_ASM --gemv-variants > $OUT/exp-tuner-timing-variants-int4.log 2>&1
grep truth $OUT/exp-tuner-timing-variants-int4.log | sed -E "s/'path': 'gemv', 'BLOCK_M': 1, //; s/ +zero.*err [^ ]+//" | cut -c1-150 | tail -30
tail -4 $OUT/exp-tuner-timing-variants-int4.log | cut -c1-110
