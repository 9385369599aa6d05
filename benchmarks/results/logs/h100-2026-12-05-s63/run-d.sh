# Session 63, call d: a gpt-oss-shaped model's prefill by probe (e2e_decode.py --gpt-oss --graphs cannot capture
# transformers' eager mask), stock / patched / patched with prefill_attention=False, 2048 and 4096 tokens; then the
# Mixtral-shaped model with --fp8 --int8 (session 62's run-h.sh, last step). Predicted: the gpt-oss prefill 10-30% less
# time patched (attention a small part next to the experts' eager loop; the eager scores 0.5-1 GB a layer at 2048).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 200 python benchmarks/results/logs/h100-2026-12-05-s63/probe_gpt_oss_prefill.py 2>&1 | grep -v Warn \
  | tee $OUT/w/gpt-oss-prefill.txt | tail -8
timeout 200 python benchmarks/e2e_decode.py $OUT/w --graphs --cache-len 4096 --moe --no-int4 --fp8 --int8 \
  --layers 4 --repeats 1 2>&1 | grep -v Warn | tail -9
tar czf $OUT/call-d.tgz -C $OUT w
