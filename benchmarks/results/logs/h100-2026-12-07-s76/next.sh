# For session 77's first call (~4 min; session 76 had no device time left for it): attention tiles of several
# query heads' rows (GQA packing, journal item 541; off by PACK_WINDOWED_GQA until these tests pass) for gpt-oss's
# sliding-window layers (128 keys, 64 / 8 heads, D 64; 36-38% of the copy floor on an H100, 261.8-275.0 us by graph
# at B S = 16384): its GPU tests, every candidate forced (exp_attention_window.py), then the registry rows tuned
# from an empty cache with the packed candidates on. Predicted: 4 heads x 32 queries compute ~160 keys a row against
# ~192-256: 1.3-1.6x, ~170-200 us. One tarball, rewritten after each step.
set -x
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p /tmp/w; pack() { tar czf $OUT/w.tgz -C /tmp w; }
timeout 60 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_attention.py -k "packed or window" \
  > /tmp/w/tests.txt 2>&1; tail -2 /tmp/w/tests.txt; grep FAILED /tmp/w/tests.txt | head; pack
timeout 130 python benchmarks/exp_attention_window.py /tmp/w --seqs 512,16384 2>&1 | grep -v Warn > /tmp/w/exp.txt
tail -4 /tmp/w/exp.txt; pack
timeout 60 python -c "import sys, rooftop.ops.attention as a, rooftop.cli as c; a.PACK_WINDOWED_GQA = True
sys.exit(c.main(['bench', 'attention_sinks_window128', '--providers', 'rooftop', '--out', '/tmp/w/bench']))" 2>&1 \
  | grep -v Warn > /tmp/w/bench.txt; grep "│ att" /tmp/w/bench.txt; pack
