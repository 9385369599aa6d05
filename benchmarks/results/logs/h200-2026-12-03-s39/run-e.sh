# session 39, call e (~2 minutes): benchmarks/exp_ln_sums.py, LayerNorm's rows two a program sharing pass 2's w and
# b loads (NOTES item 255: call d found the kernels L2-bound, the parameters two more row-sizes of L2 reads a row).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/sums
timeout 300 python benchmarks/exp_ln_sums.py $OUT/sums > $OUT/sums/log.txt 2>&1; echo "sums rc $?"
sed -n '/^registers/,$p' $OUT/sums/log.txt; tail -3 $OUT/sums/log.txt | grep -i error
