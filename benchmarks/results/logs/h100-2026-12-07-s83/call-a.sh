# Session 83, call a (~3 min, any card): item 573's GPU-size tests with key_mask_bounds (not yet run on a GPU), then
# s82 call e with --fp8-first: does the int4 GEMVs' slowdown beside fp8 caches (668.5 -> 803.0 us a step) follow the
# order in which the two models are profiled (clocks, L2 state) or the fp8 model itself?
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/a; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/a.tgz -C /tmp a; }
timeout 150 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py -k gpu 2>&1 | tail -15 \
  > $W/tests.txt; tail -4 $W/tests.txt; pack
ROOFTOP_AUTOTUNE=0 timeout 300 python benchmarks/probe_decode_step.py --batch 8 --prompt 8192 --kv-fp8 --no-pdl \
  --fp8-first --top 14 2>&1 | grep -v "Warn\|transformers\]" > $W/step.txt; tail -45 $W/step.txt; pack
