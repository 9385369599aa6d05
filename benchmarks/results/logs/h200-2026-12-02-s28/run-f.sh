# session 28, call 6: where a graphed decode step's time goes (probe_decode_step.py: kernels by GPU time a step,
# stock and patched + int4), the e2e run's tuner cache first
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 240 python benchmarks/probe_decode_step.py --top 22 > $OUT/probe-decode-step.log 2>&1; echo "rc $?"
cut -c1-150 $OUT/probe-decode-step.log | grep -v Warning | tail -80
