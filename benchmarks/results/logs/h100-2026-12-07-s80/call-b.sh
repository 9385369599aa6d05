# Session 80, call b (~5 min): fp8 KV caches (journal item 560). On an H200 first session 79's pending call instead.
# The GPU tests of decode attention, append_kv, RoPE (its fp8 refusal), attention's input checks and the HF
# integration's decode / fp8 paths; then the decode_attention family with the new decode_attention_fp8 op beside the
# 16-bit one and SDPA (GPU alone by graph).
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo $GPU
case $GPU in *H200*) exec bash benchmarks/results/logs/h100-2026-12-07-s79/call-h200.sh;; esac
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1
W=/tmp/b; mkdir -p $W; echo $GPU > $W/gpu.txt; pack() { tar czf $OUT/b.tgz -C /tmp b; }
timeout 240 python -m pytest -q -p no:cacheprovider -n 12 tests/test_decode_attention.py tests/test_rope.py \
  2>&1 | tail -15 > $W/tests.txt; tail -6 $W/tests.txt; pack
timeout 150 python -m pytest -q -p no:cacheprovider -n 12 tests/test_attention.py tests/test_integrations.py \
  -k "bad or check or fp8 or decode or append" 2>&1 | tail -8 > $W/tests-2.txt; tail -4 $W/tests-2.txt; pack
timeout 240 python benchmarks/gpu_session.py $W/bench --families decode_attention \
  --ops decode_attention,decode_attention_fp8 --providers rooftop,sdpa_flash,sdpa_cudnn --no-ncu 2>&1 \
  | grep -v Warn > $W/bench.txt; tail -30 $W/bench.txt; pack
