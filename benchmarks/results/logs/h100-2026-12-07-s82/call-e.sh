# Session 82, call e (~2 min, any card): call c without PDL (--no-pdl: each kernel's span its own): the int4 model's
# step with 16-bit and with fp8 KV caches, batch 8 over 8192-token prompts (call b: fp8 KV 1.912 ms a step against
# 2.160, though the attention kernel with mask_bounds ran 59 us against 98 at the model's shape).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/e; mkdir -p $W; echo $GPU > $W/gpu.txt
ROOFTOP_AUTOTUNE=0 timeout 400 python benchmarks/probe_decode_step.py --batch 8 --prompt 8192 --kv-fp8 --no-pdl \
  --top 14 2>&1 | grep -v "Warn\|transformers\]" > $W/step.txt; tail -45 $W/step.txt
tar czf $OUT/e.tgz -C /tmp e
