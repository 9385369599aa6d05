# Prepared in session 62 for the next (~8 min): session 62's last GPU tests (test_moe with PDL, journal 439; the
# sinks, 440-441; synchronises_host, 438), then a gpt-oss-shaped model end to end (e2e_decode.py --gpt-oss, journal
# 437: gpt-oss-20b's layer shapes, 4 layers, random bf16 weights; 32 experts of 2880 x 2880 with biases and the clamped
# gate, top 4; attention with sinks: stock's eager, the patched decode steps' by decode_attention with sinks, journal
# 440), stock's experts transformers' grouped_mm, patched moe_experts (H I = 8.3M < 2^23: a pair a program at 1 token,
# grouped at 8 tokens, 32 pairs = E), fp8 beside; batch 1 and 8. Predicted: batch 1 patched 2.0-3.0x stock (Mixtral's
# 1.74-1.98x, and stock's eager attention over a cache of 4096), fp8 1.3-1.5x patched.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py tests/test_integrations.py \
  tests/test_decode_attention.py tests/test_bench.py 2>&1 | grep -v Warn | tail -6
timeout 220 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --gpt-oss --no-int4 --fp8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -7
timeout 170 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --gpt-oss --no-int4 --fp8 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-i.tgz -C $OUT w
