# Session 73 call c (~3 min): test_moe whole with INT4_DOWN_AHEAD's rule shipped (two k-steps ahead, a register cap of
# 80, where a down range is 32 k-steps or more), then the int4 registry rows (two / four tokens of Mixtral's take it).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 60 python -m rooftop bench moe_experts_int4 --providers rooftop --out $OUT/w/bench 2>&1 | grep -v Warn \
  > $OUT/w/bench-int4.txt
grep "│ moe" $OUT/w/bench-int4.txt
(cd $OUT && tar czf all.tgz w && rm -rf w)
