# Session 83, call b (~2 min, any card; call a trimmed to what ~370 s of budget allows): the heads of 512 on a GPU,
# the GPU-size tests and the probe (decode_attention against SDPA, BLOCK_N and warps).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/b; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/b.tgz -C /tmp b; }
timeout 70 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py -k "gpu and 512" 2>&1 \
  | tail -15 > $W/tests.txt; tail -4 $W/tests.txt; pack
timeout 70 python benchmarks/results/logs/h100-2026-12-07-s83/probe-d512.py 2>&1 | grep -v Warn > $W/d512.txt
cat $W/d512.txt; pack
