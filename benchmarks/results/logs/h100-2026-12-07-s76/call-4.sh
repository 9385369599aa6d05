# Session 76 call 4 (~6 min): attention tiles of several query heads' rows (GQA packing, journal item 541) for
# gpt-oss's sliding-window layers (128 keys, 64 / 8 heads, D 64; 36-38% of the copy floor on an H100, 261.8-275.0
# us by graph at B S = 16384): its GPU tests, every candidate forced (exp_attention_window.py), then the registry
# rows tuned from an empty cache. Predicted: 4 heads x 32 queries compute ~160 keys a row against ~192-256:
# 1.3-1.6x, ~170-200 us.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 110 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py -k "packed or window or sinks" \
  > $OUT/w/tests.txt 2>&1; tail -2 $OUT/w/tests.txt; grep FAILED $OUT/w/tests.txt | head
timeout 170 python benchmarks/exp_attention_window.py $OUT/w 2>&1 | grep -v Warn > $OUT/w/exp.txt; tail -5 $OUT/w/exp.txt
timeout 90 python -m rooftop bench attention_sinks_window128 --providers rooftop --out $OUT/w/bench 2>&1 \
  | grep -v Warn > $OUT/w/bench.txt; grep "│ att" $OUT/w/bench.txt
tar czf $OUT/w.tgz -C $OUT w
