# Session 63, call b: test_bench's alternating-graph test alone (it failed under -n 12 in call a); the attention_sinks
# family; a gpt-oss-shaped model's 2048-token prefill and a Llama-3-8B-shaped one's 4096, each patched against patched
# with the model's own prefill attention (--prefill-attention-ab). Predictions: run-j.sh's and run-k.sh's headers.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 40 python -m pytest -q -p no:logging --tb=short tests/test_bench.py -k alternating 2>&1 | grep -v Warn | tail -4
timeout 180 python benchmarks/gpu_session.py $OUT/w/session --families attention_sinks --no-ncu 2>&1 \
  | grep -v Warn | tail -14
timeout 160 python benchmarks/e2e_decode.py $OUT/w/gptoss --graphs --cache-len 4096 --gpt-oss --no-int4 --layers 4 \
  --prompt 2048 --new 8 --repeats 1 --prefill-attention-ab 2>&1 | grep -v Warn | tail -7
timeout 190 python benchmarks/e2e_decode.py $OUT/w/llama --graphs --cache-len 4200 --no-int4 --layers 8 \
  --prefill-attention-ab --prompt 4096 --new 8 --repeats 2 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-b.tgz -C $OUT w
