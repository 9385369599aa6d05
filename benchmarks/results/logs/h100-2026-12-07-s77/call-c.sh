# Session 77's call c (H100, run inline after call a): the attention_sinks family with PACK_WINDOWED_GQA = True,
# and every candidate forced at S = 4096; then (call d, inline) test_attention, test_decode_attention and
# test_integrations whole with the flag on: 475 passed, 11 skipped.
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks:$PWD/tests PYTHONUNBUFFERED=1; mkdir -p /tmp/c
timeout 130 python benchmarks/gpu_session.py /tmp/c/sinks --families attention_sinks --no-ncu 2>&1 | grep -v Warn > /tmp/c/sinks.txt
timeout 100 python benchmarks/exp_attention_window.py /tmp/c --seqs 4096 2>&1 | grep -v Warn > /tmp/c/exp.txt
