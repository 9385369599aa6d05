# session 21, call 7 (the last minutes): every int4 M = 1 candidate at 28672 x 8192 and 14336 x 4096, truth timing
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 170 python benchmarks/exp_tuner_timing.py $OUT --ms 1 --bits 4 --shapes 28672x8192,14336x4096 --budget 100 2>&1 | tee $OUT/exp-tuner-timing-rows8.log | grep truth | sed -E "s/ zero.*'BLOCK_N': ([0-9]+), 'BLOCK_K': ([0-9]+), 'SPLIT_K': ([0-9]+).*'SLICES': ([0-9]+).*/ BN \1 BK \2 split \3 slices \4/" | cut -c1-120
