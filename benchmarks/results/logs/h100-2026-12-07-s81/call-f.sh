# Session 81, call f (~1 min, any card): the HF fp8 KV tests at the final code (items 566-570's mends).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
timeout 150 python -m pytest -q -p no:cacheprovider -n 12 tests/test_integrations.py tests/test_rope.py \
  tests/test_compile.py -k "fp8 or append or rope or rewritten" 2>&1 | tail -2
