# For session 70's first call (~3 min; not yet run). 1. test_moe at session 69's last commit (_gate_up_program: the
# mma kernels' offline SASS unchanged, not run on a GPU since call j). 2. The int4 per-pair mma down kernel at 16 and
# 32 programs an SM (8 lost 19%, journal item 514; without the hint 16 was level with 32). 3. gpt-oss-20b's one token
# with and without the L2 hint (41.1 / 47.1 us twice, item 513) beside Mixtral's and Qwen3's 1-2 tokens.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 120 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x16,1x1x32 --cases 1x8x2x4096x14336,2x8x2x4096x14336,4x128x8x2048x768 2>&1 | grep -v Warn > $OUT/w/int4.txt
grep rooftop $OUT/w/int4.txt
timeout 120 python benchmarks/exp_moe_grouped.py $OUT/w/grouped --quant int4 --quick --no-l2-256b --tokens 1,2 \
  2>&1 | grep -v Warn > $OUT/w/grouped.txt
grep "E " $OUT/w/grouped.txt
