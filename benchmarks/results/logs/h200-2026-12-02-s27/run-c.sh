# session 27, call 3: end-to-end decode under CUDA graphs with each patched model also with gate / up apart
# (merge_gate_up=False), written as a results file (benchmarks/results format, family e2e_decode)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 420 python benchmarks/e2e_decode.py $OUT --graphs > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -8 $OUT/e2e-graphs.log | cut -c1-160
