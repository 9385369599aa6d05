# Session 43, call a: the int8 Gluon variants (store-through-shared-memory kernel) tested, then timed beside every
# other int8 candidate; the arrival counters' device memory (NOTES session 42 Next 3).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/w/gpu.txt
timeout 60 python benchmarks/probe_counter_memory.py 2>&1 | tee $OUT/w/counter-memory.log
timeout 220 python -m pytest -q -n 8 -x tests/test_quant_matmul.py -k "gluon and (i8 or through or candidates or plan)" \
  2>&1 | tail -25 | tee $OUT/w/tests-gluon-i8.log
timeout 300 python benchmarks/exp_tuner_timing.py $OUT/w --bits 8 --ms 16,64,256 --gluon-min-m 5 --budget 260 \
  2>&1 | tee $OUT/w/exp-tuner-timing-i8.log
tar czf $OUT/call-a.tgz -C $OUT w
