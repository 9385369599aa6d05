# Session 67, call e. The int4 grouped kernels' mma.sync path (call d: Mixtral 4 / 8 / 16 tokens 449 / 498 / 539 us
# against 656 / 667 / 669 with the tl.dot tile; 46-55% of the once-an-expert floor: 214 registers, two programs an
# SM, each k-step's 16 KB loaded only when it starts) now loads each k-step's words, scales and x one step ahead,
# unmasked (the lane's last chunk again past k_end, its scale zeroed). 1. GPU tests test_moe. 2. int4 grouped against
# a pair a program at 1-16 tokens: predicted Mixtral 8-16 tokens 350-420 us.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
grep -n "^E \|FAILED\|Error" $OUT/w/tests.txt | head -30; tail -1 $OUT/w/tests.txt
timeout 120 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --tokens 1,2,4,8,12,16 --quick 2>&1 \
  | grep -v Warn > $OUT/w/grouped.txt
tar czf $OUT/call.tgz -C $OUT w
grep "shipped\|pair a program" $OUT/w/grouped.txt
