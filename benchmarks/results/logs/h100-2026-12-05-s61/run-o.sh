# Session 61 (prepared in session 60), after run-n.sh (~4 min): a Mixtral-shaped model end to end (Llama-3-8B's
# layer shapes, 8 experts, top 2; 4 layers; a static cache of 4096; each decode step a CUDA graph): stock with
# transformers' grouped_mm experts (its eager loop synchronises the host: no graph holds it) against patched
# (moe_experts under 17 tokens a call). Predicted: patched 1.5-2.5x stock at batch 1.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 240 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --layers 4 \
  --repeats 2 2>&1 | grep -v Warn | tail -6
timeout 200 python benchmarks/e2e_decode.py $OUT/w/b8 --graphs --cache-len 4096 --moe --no-int4 --layers 4 \
  --batch 8 --repeats 1 2>&1 | grep -v Warn | tail -6
tar czf $OUT/call-o.tgz -C $OUT w
