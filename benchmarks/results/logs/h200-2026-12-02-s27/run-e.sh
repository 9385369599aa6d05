# session 27, call 5: the row kernels' PDL A / B in a graph of 8 MLP halves (exp_row_pdl.py), untuned GEMV configs
export ROOFTOP_CACHE_DIR=/tmp/cache ROOFTOP_AUTOTUNE=0 PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 100 python benchmarks/exp_row_pdl.py > $OUT/exp-row-pdl.log 2>&1; echo "rc $?"; tail -4 $OUT/exp-row-pdl.log
