# Session 77's second call, for an H200 (~9 min; one tarball $OUT/b.tgz rewritten after each step): the Mixtral-shaped
# model (s74/next.sh), the attention_sinks family, fp8_linear at decode M and the prefill route's A/B (s75/second.sh).
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/b; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/b.tgz -C /tmp b; }
timeout 110 python benchmarks/gpu_session.py $W/sinks --families attention_sinks --no-ncu 2>&1 | grep -v Warn \
  > $W/sinks.txt; tail -12 $W/sinks.txt; pack
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $W/e2e --graphs --cache-len 4096 \
  --moe --int8 --layers 4 --repeats 1 2>&1 | grep -v Warn > $W/e2e.txt; tail -10 $W/e2e.txt; pack
timeout 140 python benchmarks/gpu_session.py $W/fp8 --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn > $W/fp8.txt; tail -16 $W/fp8.txt; pack
timeout 150 python benchmarks/e2e_decode.py $W/p4096 --graphs --cache-len 4200 --no-int4 --layers 8 \
  --prefill-attention-ab --prompt 4096 --new 8 --repeats 2 2>&1 | grep -v Warn > $W/p4096.txt; tail -7 $W/p4096.txt
pack
