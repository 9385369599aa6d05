# session 21, call 5: the GEMV's sliced candidates (K cut among a program's warps): GPU tests, then every M = 1 candidate
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 120 python -m pytest tests/test_quant_matmul.py -q -k "slices or split or gemv or plan" -p no:cacheprovider -rf > $OUT/tests/slices.txt 2>&1
tail -3 $OUT/tests/slices.txt
for b in 4 8; do
  timeout 220 python benchmarks/exp_tuner_timing.py $OUT/b$b --ms 1 --bits $b --budget 180 > $OUT/exp-tuner-timing-slices-int$b.log 2>&1
  tail -4 $OUT/exp-tuner-timing-slices-int$b.log | cut -c1-200
done
