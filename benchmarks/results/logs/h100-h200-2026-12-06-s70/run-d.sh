# Session 70 call d (~2.5 min), right after call c if its shipped launch (1, 1, 24, 24, 8) held: the int4 registry rows
# (graph replay) and the Mixtral-shaped model (4 layers, cache 4096, a graph a step) at the shipped dispatch.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 45 python -m rooftop bench moe_experts_int4 --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn \
  > $OUT/w/bench-moe_experts_int4.txt
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
(cd $OUT/w && tar czf ../bench.tgz bench e2e && rm -rf bench e2e)
grep "│ moe" $OUT/w/bench-moe_experts_int4.txt
tail -8 $OUT/w/e2e.txt
