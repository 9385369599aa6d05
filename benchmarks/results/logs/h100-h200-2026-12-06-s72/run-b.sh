# Session 72 call b (~3 min; cut to the budget left after two refused starts): the int4 down kernel's first weights
# before its PDL wait (moe.INT4_DOWN_EARLY, item 527) against after, twice each in alternation, at one / two tokens of
# Qwen3-30B-A3B's (predicted one token 16.5 -> ~15 us), one of Mixtral's (~1 us less) and one of gpt-oss-20b's; then
# test_moe's pair mma test (EARLY on and off) and the grouped int4 tests (their _int4_mma_sums call changed).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-early 0,1,0,1 --cases 1x128x8x2048x768,2x128x8x2048x768,1x8x2x4096x14336,1x32x4x2880x2880 \
  2>&1 | grep -v Warn > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
timeout 100 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "pair_mma or grouped" \
  > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
(cd $OUT && tar czf all.tgz w && rm -rf w)
