# session 39, call f (~2 minutes): benchmarks/exp_softmax_mufu.py (NOTES item 256: is softmax's one-program reload
# kernel held by its exponentials? pass 1's on the FMA pipe, or none as a diagnostic).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/mufu
timeout 240 python benchmarks/exp_softmax_mufu.py $OUT/mufu > $OUT/mufu/log.txt 2>&1; echo "mufu rc $?"
sed -n '/^copy/,$p' $OUT/mufu/log.txt; tail -3 $OUT/mufu/log.txt | grep -i error
