# Session 76 call 2 (~6 min on an H200): the Mixtral-shaped int8 model (session 74's next.sh, H200 half), then
# session 75's second.sh (attention_sinks rows, fp8_linear at decode M, the prefill route's A/B at 4096 tokens).
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 \
  --moe --int8 --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt; tail -10 $OUT/w/e2e.txt
bash benchmarks/results/logs/h100-2026-12-06-s75/second.sh
