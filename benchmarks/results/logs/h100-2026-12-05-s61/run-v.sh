# Prepared in session 61 for a later call (~6-10 min; after run-u.sh): the Mixtral-shaped model with int8 weights
# (e2e_decode.py --int8: its linears W8A16 int8 group 128, its experts int8 a scale per output row, weight-only)
# beside fp8, batch 1. quant_matmul's int8 tuning from an empty cache may take minutes (int4's took ~9): the timeout
# leaves room. Predicted: int8 within 10% of fp8's tok/s (the same bytes; W8A16 GEMVs against fp8's split-K), its
# logits far closer to stock's (CPU, tiny model: 1.2e-3 against fp8's 8.4e-2).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 560 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --int8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-v.tgz -C $OUT w
