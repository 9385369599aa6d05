# For session 75's first call (~4 min on an H100, ~8 on an H200; one tarball rewritten after each step, so a call cut
# by its limit keeps what ran): test_moe whole at the shipped code (item 530's rule has run only in the pair mma tests
# and the int4 registry rows, session 74 call a3); the int4 registry rows; on an H200 also the bf16 / int8 / fp8 rows
# and the Mixtral-shaped model (the H200 rows sessions 65-74 lack).
set -x
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W
pack() { tar czf $OUT/all.tgz -C /tmp w; }
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $W/tests.txt 2>&1
tail -1 $W/tests.txt; grep -n "FAILED\|Error" $W/tests.txt | head -20; pack
OPS=moe_experts_int4; case $GPU in *H200*) OPS="moe_experts_int4 moe_experts moe_experts_int8 moe_experts_fp8";; esac
for op in $OPS; do timeout 55 python -m rooftop bench $op --providers rooftop --out $W/bench 2>&1 | grep -v Warn \
  > $W/bench-$op.txt; grep "│ moe" $W/bench-$op.txt; pack; done
case $GPU in *H200*) ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $W/e2e --graphs --cache-len 4096 \
  --moe --int8 --layers 4 --repeats 1 2>&1 | grep -v Warn > $W/e2e.txt; tail -10 $W/e2e.txt; pack;; esac
