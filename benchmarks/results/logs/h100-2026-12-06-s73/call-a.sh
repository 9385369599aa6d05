# Session 73 call a: session 72's next.sh as sent (logs/h100-h200-2026-12-06-s72/next.sh).
# For session 73's first call (~6-7 min; not yet run): test_moe whole (item 527 changed `_int4_mma_sums`' callers,
# the grouped kernels' too: their SASS is unchanged offline, but only the pair mma test ran on a GPU since), the MoE
# registry rows of the four formats and the Mixtral-shaped model (4 layers, cache 4096, a graph a step; int4 / int8 /
# patched / stock) with INT4_DOWN_EARLY: on an H200 the rows sessions 65-72 lack, on an H100 the model's tok/s with
# item 527 (session 71: int4 1018.5 tok/s). Everything in one tarball (a call returns at most 8 files).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do timeout 45 python -m rooftop bench $op \
  --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
for op in moe_experts moe_experts_int8 moe_experts_fp8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
ROOFTOP_AUTOTUNE=0 timeout 150 python benchmarks/e2e_decode.py $OUT/w/e2e --graphs --cache-len 4096 --moe --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn > $OUT/w/e2e.txt
tail -10 $OUT/w/e2e.txt
(cd $OUT && tar czf all.tgz w && rm -rf w)
