# Session 73 call b (~5 min): INT4_DOWN_AHEAD (the per-pair int4 mma down kernel's k-steps of weights ahead, loaded
# before its PDL wait with INT4_DOWN_EARLY): 1 (shipped) against 2 with a register cap of 80, twice in alternation, at
# one / two tokens of Qwen3-30B-A3B's, one / four of Mixtral's, one of gpt-oss-20b's; then at one token of Qwen3's
# with gate / up's aim 11 (K_WARPS 2: fewer gate / up warps an SM, more down programs resident during its tail) and
# 2 uncapped; the pair mma GPU test with AHEAD 2 among its cases.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 90 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "pair_mma or down_early" \
  > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
timeout 200 python benchmarks/exp_moe_launch.py $OUT/w/a --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-ahead 1,2/80,1,2/80 \
  --cases 1x128x8x2048x768,2x128x8x2048x768,1x8x2x4096x14336,4x8x2x4096x14336,1x32x4x2880x2880 2>&1 \
  | grep -v Warn > $OUT/w/a.txt
grep "rooftop mma" $OUT/w/a.txt
timeout 100 python benchmarks/exp_moe_launch.py $OUT/w/b --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8,1x1x24x11x8 --down-ahead 1,2/80,2 --cases 1x128x8x2048x768 2>&1 | grep -v Warn > $OUT/w/b.txt
grep "rooftop mma" $OUT/w/b.txt
(cd $OUT && tar czf all.tgz w && rm -rf w)
