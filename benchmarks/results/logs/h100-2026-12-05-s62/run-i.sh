# Prepared in session 62 for the next (~7 min): a gpt-oss-shaped model end to end (e2e_decode.py --gpt-oss, journal
# 436: gpt-oss-20b's layer shapes, 4 layers, random bf16 weights; 32 experts of 2880 x 2880 with biases and the clamped
# gate, top 4; attention with sinks, eager in stock and patched), stock's experts transformers' grouped_mm, patched
# moe_experts (grouped path: H I = 8.3M < 2^23, so a pair a program at 1 token, grouped at 8 tokens, 32 pairs = E),
# fp8 beside; batch 1 and 8. Predicted: batch 1 patched 1.6-2.0x stock (Mixtral's was 1.74-1.98x), fp8 1.3-1.5x
# patched; the eager attention's many small kernels may hold the patched step under 70% of its floor.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 60 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_moe.py -k gpt_oss 2>&1 | grep -v Warn | tail -3
timeout 240 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --gpt-oss --no-int4 --fp8 --layers 4 \
  --repeats 1 2>&1 | grep -v Warn | tail -7
timeout 200 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --gpt-oss --no-int4 --fp8 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-i.tgz -C $OUT w
