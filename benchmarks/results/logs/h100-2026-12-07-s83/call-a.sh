# Session 83, call a (~4 min, any card): item 573's GPU-size tests with key_mask_bounds (not yet run on a GPU) and the
# new heads of 512, the D = 512 probe (probe-d512.py: BLOCK_N, warps), then s82 call e
# with --fp8-first: does the int4 GEMVs' slowdown beside fp8 caches (668.5 -> 803.0 us a step; every small kernel
# also 15-20% slower, the lm_head's cuBLAS GEMV 1.6%) follow the order the two models are profiled in (clocks)?
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/a; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/a.tgz -C /tmp a; }
L=benchmarks/results/logs/h100-2026-12-07-s83
timeout 120 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py \
  -k "gpu and (key_mask or sinks_and_softcap or 512)" 2>&1 | tail -15 \
  > $W/tests.txt; tail -4 $W/tests.txt; pack
timeout 80 python $L/probe-d512.py 2>&1 | grep -v Warn > $W/d512.txt; cat $W/d512.txt; pack
ROOFTOP_AUTOTUNE=0 timeout 200 python benchmarks/probe_decode_step.py --batch 8 --prompt 8192 --kv-fp8 --no-pdl \
  --fp8-first --top 14 2>&1 | grep -v "Warn\|transformers\]" > $W/step.txt; tail -45 $W/step.txt; pack
