# Prepared in session 63 (no GPU lent that session) for the next (~5 min): SDPA's prefill routed to rooftop.attention
# on sm_90 (journal 446), end to end: a Llama-3-8B-shaped model (8 layers, bf16, no int4) with a 4096-token prompt,
# prefill_ms stock (SDPA: flash, torch's first choice), patched, and patched with its prefill's attention left to SDPA
# (--prefill-attention-ab: the route alone); and 512 tokens, batch 8. Predicted: the patched prefill 2-5% less time
# than the A/B row at 4096 (its GEMMs, cuBLAS on both sides, ~90% of it; attention 1.3-2x flash's), within 2% at
# 512 x 8.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
mkdir -p $OUT/w
timeout 230 python benchmarks/e2e_decode.py $OUT/w/p4096 --graphs --cache-len 4200 --no-int4 --layers 8 \
  --prefill-attention-ab --prompt 4096 --new 8 --repeats 2 2>&1 | grep -v Warn | tail -7
timeout 230 python benchmarks/e2e_decode.py $OUT/w/p512b8 --graphs --no-int4 --layers 8 --batch 8 \
  --prefill-attention-ab --prompt 512 --new 8 --repeats 2 2>&1 | grep -v Warn | tail -7
tar czf $OUT/call-k.tgz -C $OUT w
