# Session 68 call h (~3 min): AHEAD again, now with x (h) a k-tile ahead too: offline the per-pair int4 loop waits on
# x's L2 load each k-tile (LDG x -> STSM -> BAR -> LDS before the first FFMA); call d's AHEAD had only the weights
# ahead (no gain). Predicted: int4 one token of Mixtral's 99 -> 75-85 us, Qwen3's 4 tokens 55 -> 45-50. GPU tests of
# the per-pair pipelines (the test now with NaN-padded weights, ragged column tiles) first.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py -k "pipelines or int4" \
  > $OUT/w/tests.txt 2>&1; tail -1 $OUT/w/tests.txt; grep -n "FAILED" $OUT/w/tests.txt | head
timeout 80 python benchmarks/exp_moe_launch.py $OUT/w/int4 --quant int4 --per-sm 32 --launches 8x256x2 \
  --stages 1/1,1/1a 2>&1 | grep -v Warn > $OUT/w/int4.txt
timeout 50 python benchmarks/exp_moe_launch.py $OUT/w/int8 --quant int8 --per-sm 4 --launches 8x256x2 \
  --stages 3/3,1/1a 2>&1 | grep -v Warn > $OUT/w/int8.txt
grep rooftop $OUT/w/int4.txt $OUT/w/int8.txt | sed 's/.*w\///'
