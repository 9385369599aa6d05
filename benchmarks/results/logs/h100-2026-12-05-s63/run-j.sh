# Prepared in session 63 (no GPU lent that session) for the next (~8 min; after s62's run-i.sh and run-h.sh). GPU tests:
# attention with sinks at gpt-oss-20b's shapes and in the Gluon ping-pong kernel (journal 444, 449) and its dispatch,
# soft-capping at Gemma-2-9B's shapes (453), the patched gpt-oss and Gemma 2 at prefill and decode (445, 454), SDPA
# prefills routed to rooftop.attention (446). Then the attention_sinks family (rooftop / eager / compile; 64 query heads
# over 8 kv heads, D = 64, B * S = 16384; causal, and causal within 128 keys) and the gpt-oss-shaped model with a
# 2048-token prompt (prefill_ms: stock's eager attention against the patched).
# Predicted: causal (ping-pong with sinks) 0.85-0.95x of attention_d64_causal's rooftop rate from S = 2048; eager 5-20x
# slower and out of memory at 16384 (its [1, 64, S, S + 1] scores); compile 2-5x slower than rooftop; the window-128 op
# (the Triton kernel) ~114 FLOP a byte, under the ridge: 40-60% of its floor; the model's prefill 10-30% less time
# patched (its experts' eager loop is the same on both sides past 16 tokens).
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 150 python -m pytest -q -p no:logging --tb=short -n 8 tests/test_attention.py tests/test_integrations.py \
  tests/test_decode_attention.py \
  -k "sinks or softcap or gemma2 or gluon_dispatch or gpt_oss or prefill" 2>&1 | grep -v Warn | tail -6
timeout 240 python benchmarks/gpu_session.py $OUT/w/session --families attention_sinks --no-ncu 2>&1 \
  | grep -v Warn | tail -16
timeout 180 python benchmarks/e2e_decode.py $OUT/w/prefill --graphs --cache-len 4096 --gpt-oss --no-int4 --layers 4 \
  --prompt 2048 --new 8 --repeats 1 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-j.tgz -C $OUT w
