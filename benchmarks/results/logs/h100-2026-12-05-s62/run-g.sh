# Session 62, call g (~3.5 min): the quantized experts' dispatch after call f (fp8 / int8 experts take the grouped path
# only where k T >= E): test_moe under -n 8, and the Mixtral-shaped model with --fp8 at batch 1. Predicted: tests pass;
# fp8 back to call c-d's 807-810 tok/s (call f: 782 with fp8 experts grouped at one token), patched bf16 ~588.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 80 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py 2>&1 | grep -v Warn | tail -3
timeout 120 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-g.tgz -C $OUT w
