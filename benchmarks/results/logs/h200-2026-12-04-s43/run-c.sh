# Session 43, call c: the Triton swap-AB kernel's int8 path in the wgmma register layout (no shared-memory round
# trip): GPU tests of the int8 tensor-core paths, the counters probe and test (primary context kept), then every int8
# candidate at batch 16 / 64 timed alone.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python benchmarks/probe_counter_memory.py 2>&1 | tee $OUT/w/counter-memory.log
timeout 200 python -m pytest -q -n 8 tests/test_plans.py tests/test_quant_matmul.py \
  -k "counters or orientations or paths_match or every_candidate or gpu_shapes or cuda_graph or pdl_chain or plan_reuse" \
  2>&1 | tail -15 | tee $OUT/w/tests-int8-dot.log
timeout 260 python benchmarks/exp_tuner_timing.py $OUT/w --bits 8 --ms 16,64 --budget 220 \
  2>&1 | tee $OUT/w/exp-tuner-timing-i8-dot.log
tar czf $OUT/call-c.tgz -C $OUT w
