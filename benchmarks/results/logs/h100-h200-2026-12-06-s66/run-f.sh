# Session 66, call f (the budget's last ~350 s): after the review fixes (int4 grouped only up to MOE_MAX_TOKENS tokens;
# the layout tests on poisoned buffers; int4 sentinels, gate / up groups of 64). 1. GPU tests of those. 2. Registry rows
# of int4 experts on whichever card comes (an H200's would be the anchors' card).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 80 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "int4 or sorted or dispatch or replay" \
  > $OUT/w/tests.txt 2>&1; grep -n "^E \|FAILED" $OUT/w/tests.txt | head; tail -1 $OUT/w/tests.txt
for op in moe_experts_int8 moe_experts_int4; do timeout 35 python -m rooftop bench $op --providers rooftop \
  --out $OUT/w/bench 2>&1 | grep -v Warn > $OUT/w/bench-$op.txt; done
tar czf $OUT/call-f.tgz -C $OUT w
for op in moe_experts_int8 moe_experts_int4; do grep "│ moe" $OUT/w/bench-$op.txt; done
