# Session 80, call c (~5 min): the int4 Llama-3-8B-shaped model (8 layers) decoding with fp8 KV caches against 16-bit
# ones, a batch of 8 sequences over 8192-token prompts (KV 2 GB in 16 bits, about the weights' bytes), by graphs.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/c; mkdir -p $W; echo $GPU > $W/gpu.txt
ROOFTOP_AUTOTUNE=0 timeout 420 python benchmarks/e2e_decode.py $W/e2e --graphs --batch 8 --prompt 8192 --new 32 \
  --layers 8 --repeats 1 --kv-fp8-ab 2>&1 | grep -v Warn > $W/e2e.txt; tail -14 $W/e2e.txt
tar czf $OUT/c.tgz -C /tmp c
