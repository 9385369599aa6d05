# Session 71 call b (~4 min), after call a: the MoE registry rows of the four formats (graph replay) and the
# Mixtral-shaped model (4 layers, cache 4096, a graph a step; int4 / int8 / patched / stock) at the shipped dispatch;
# on an H200 these are the rows sessions 65-70 lack.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
tail -10 $OUT/w/e2e.txt
