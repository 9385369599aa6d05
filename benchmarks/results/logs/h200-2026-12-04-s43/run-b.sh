# Session 43, call b: the arrival counters' device memory; every Gluon test (int4 and int8); the int8 results rows at
# batch 64 and 256 (the batches whose candidates gained the int8 Gluon variants), rooftop and cuBLAS in one run.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python benchmarks/probe_counter_memory.py 2>&1 | tee $OUT/w/counter-memory.log
timeout 240 python -m pytest -q -n 8 tests/test_quant_matmul.py -k "gluon" 2>&1 | tail -15 | tee $OUT/w/tests-gluon.log
timeout 280 python benchmarks/gpu_session.py $OUT/w/results --families quant_matmul --ops quant_matmul_int8 \
  --leading 64,256 --providers rooftop,cublas --no-ncu 2>&1 | tail -40 | tee $OUT/w/session-int8.log
tar czf $OUT/call-b.tgz -C $OUT w
