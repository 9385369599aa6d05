# session 39, call d (~2 minutes): benchmarks/ncu_ln_params.py (NOTES item 254: what LayerNorm's w and b cost its
# wide rows, read by Nsight Compute).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 400 python benchmarks/ncu_ln_params.py $OUT; echo "ncu rc $?"
