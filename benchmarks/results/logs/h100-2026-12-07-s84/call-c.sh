# Session 84, call c (~6 min, any card; call a reordered by what decides most, for a budget cut by refusals): the
# bounds and heads-of-512 GPU tests, probe-d512.py, check_architectures.py --kv-fp8 in bf16 (item 584's new
# architectures among them), then session 82's call e with --fp8-first. One tarball $OUT/c.tgz rewritten after each.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/c; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/c.tgz -C /tmp c; }
L=benchmarks/results/logs/h100-2026-12-07-s83
timeout 120 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py \
  -k "gpu and (key_mask or sinks_and_softcap or 512)" 2>&1 | tail -15 > $W/tests.txt; tail -4 $W/tests.txt; pack
timeout 80 python $L/probe-d512.py 2>&1 | grep -v Warn > $W/d512.txt; cat $W/d512.txt; pack
timeout 170 python benchmarks/check_architectures.py $W/arch --kv-fp8 --dtype bfloat16 2>&1 \
  | grep "^|\|off by\|Error" > $W/arch.txt; cut -d'|' -f2,4-10 $W/arch.txt | cut -c1-150; pack
ROOFTOP_AUTOTUNE=0 timeout 200 python benchmarks/probe_decode_step.py --batch 8 --prompt 8192 --kv-fp8 --no-pdl \
  --fp8-first --top 14 2>&1 | grep -v "Warn\|transformers\]" > $W/step.txt; tail -45 $W/step.txt; pack
