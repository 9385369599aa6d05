# session 27, call 4 (the machine of call 3, warm: its tuner and Triton caches): e2e again with the int4 model
# without the row kernels' PDL ahead of the one with it (call 3 had it last and ran it 4.5% faster)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 240 python benchmarks/e2e_decode.py $OUT --graphs --row-pdl-ab > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
