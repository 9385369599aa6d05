# Session 72 call c (~2 min; run-b.sh cut to the 299 s left after three refused starts): INT4_DOWN_EARLY off / on
# twice in alternation at one token of Qwen3-30B-A3B's and of Mixtral's; the pair mma GPU test (EARLY on and off).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 70 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --launches 8x256x2 --per-sm 32 \
  --mma 1x1x24x24x8 --down-early 0,1,0,1 --cases 1x128x8x2048x768,1x8x2x4096x14336 2>&1 | grep -v Warn \
  > $OUT/w/int4.txt
grep "rooftop mma" $OUT/w/int4.txt
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "pair_mma" > $OUT/w/tests.txt 2>&1
tail -1 $OUT/w/tests.txt; grep -n "FAILED\|Error" $OUT/w/tests.txt | head -20
(cd $OUT && tar czf all.tgz w && rm -rf w)
