# Session 75's second call, for an H200 (~5 min; one tarball rewritten after each step): the H200 rows that sessions
# 59-63 left (NOTES "Not yet run on a GPU"): the attention_sinks family (its rows are an H100's), fp8_linear at
# decode M (s59's run-i.sh step 2), and the prefill route's A/B at 4096 tokens (s63's run-k.sh; 1.1% on the H100,
# predicted 2-5%).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/w2; mkdir -p $W
pack() { tar czf $OUT/second.tgz -C /tmp w2; }
timeout 120 python benchmarks/gpu_session.py $W/sinks --families attention_sinks --no-ncu 2>&1 | grep -v Warn \
  > $W/sinks.txt; tail -12 $W/sinks.txt; pack
timeout 150 python benchmarks/gpu_session.py $W/fp8 --families matmul --ops fp8_linear \
  --providers rooftop,cublas,scaled_mm --no-ncu 2>&1 | grep -v Warn > $W/fp8.txt; tail -16 $W/fp8.txt; pack
timeout 150 python benchmarks/e2e_decode.py $W/p4096 --graphs --cache-len 4200 --no-int4 --layers 8 \
  --prefill-attention-ab --prompt 4096 --new 8 --repeats 2 2>&1 | grep -v Warn > $W/p4096.txt; tail -7 $W/p4096.txt
pack
