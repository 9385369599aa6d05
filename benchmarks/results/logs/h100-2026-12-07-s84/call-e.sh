# Session 84, call e (~2 min, any card; the last ~390 s of budget after six refusals): the heads-of-512 and bounds
# GPU tests, then probe-d512.py as far as it gets. One tarball $OUT/e.tgz rewritten after each step.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/e; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/e.tgz -C /tmp e; }
timeout 75 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py \
  -k "gpu and (key_mask or sinks_and_softcap or 512)" 2>&1 | tail -15 > $W/tests.txt; tail -4 $W/tests.txt; pack
timeout 50 python benchmarks/results/logs/h100-2026-12-07-s83/probe-d512.py 2>&1 | grep -v Warn > $W/d512.txt
cat $W/d512.txt; pack
