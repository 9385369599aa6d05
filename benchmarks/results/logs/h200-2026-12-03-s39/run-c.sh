# session 39, call c (~3 minutes): benchmarks/exp_ln_sums.py with pass 2's w and b loaded 1-3 tiles ahead (NOTES
# item 253: call b found the parameters, not the reduction, hold LayerNorm under its bare form).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/sums
timeout 300 python benchmarks/exp_ln_sums.py $OUT/sums > $OUT/sums/log.txt 2>&1; echo "sums rc $?"
sed -n '/^registers/,$p' $OUT/sums/log.txt; tail -3 $OUT/sums/log.txt | grep -i error
