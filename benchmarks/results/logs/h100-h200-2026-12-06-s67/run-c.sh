# Session 67, call c (call b's steps cut by their timeouts). 1. GPU tests: test_moe alone (call b: test_moe +
# test_quant_matmul reached 94% in 200 s, no failure). 2. int4 / int8 prefill at 4096 tokens of Mixtral's and Qwen3's
# experts (H100 s66: Mixtral int4 13.34 ms, int8 8.51; call b at 512 tokens: int4 1.58 ms, bf16 1.13): predicted int4
# 9-10.5 ms at 4096.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 120 python benchmarks/exp_moe_prefill.py $OUT/w/int4 --ops --quant int4,int8 --names mixtral,qwen3 \
  --tokens 4096 2>&1 | grep -v "Warn" > $OUT/w/int4.txt
timeout 150 python -m pytest -q -p no:logging --tb=short -n 12 tests/test_moe.py > $OUT/w/tests.txt 2>&1
grep -n "^E \|FAILED" $OUT/w/tests.txt | head -20; tail -1 $OUT/w/tests.txt
tar czf $OUT/call.tgz -C $OUT w
grep "shipped\|grouped_mm" $OUT/w/int4.txt
