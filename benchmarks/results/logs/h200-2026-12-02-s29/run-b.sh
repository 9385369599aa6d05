# session 29, call b: decode_attention with its merge as a second kernel: GPU tests, launch parameters against
# SDPA; then the decode-step probe as committed (session 28's Next 3), the e2e tuner cache first
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
FILES=tests/test_decode_attention.py bash benchmarks/gpu_tests.sh "gpu or slow or not slow" 150
timeout 270 python benchmarks/exp_decode_attention.py $OUT > $OUT/exp-decode-attention.log 2>&1; echo "rc $?"
grep -v Warn $OUT/exp-decode-attention.log | grep -v "return F" | tail -16 | cut -c1-220
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 130 python benchmarks/probe_decode_step.py --top 22 > $OUT/probe-decode-step.log 2>&1; echo "rc $?"
cut -c1-150 $OUT/probe-decode-step.log | grep -v Warning | tail -40
