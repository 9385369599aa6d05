# Session 62, call d (~8 min): 1. test_moe.py + test_integrations.py under -n 8 again, tracebacks kept (call a: 25
# failed so; serially all 54 passed in call c); 2. s61's run-v.sh: the Mixtral-shaped model with int8 weights beside fp8,
# batch 1 (int8 within 10% of fp8's tok/s predicted); quant_matmul's int8 tuning from an empty cache.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py 2>&1 \
  | grep -v Warn > $OUT/w/tests-n8.txt
grep -n "^E \|Error" $OUT/w/tests-n8.txt | head -30; tail -3 $OUT/w/tests-n8.txt
timeout 400 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --int8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -8
tar czf $OUT/call-d.tgz -C $OUT w
