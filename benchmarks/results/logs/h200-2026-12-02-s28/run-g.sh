# session 28, call 7: probe_decode_step.py as committed (GraphedDecode's step, the kernels grouped into the step's
# parts), its table merged into a copy of the e2e results file
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
cp benchmarks/results/h200-2026-12-02-e2e_decode.json $OUT/
timeout 150 python benchmarks/probe_decode_step.py --top 40 --merge-into $OUT/h200-2026-12-02-e2e_decode.json \
  > $OUT/probe-decode-step.log 2>&1; echo "rc $?"; grep -v -i warn $OUT/probe-decode-step.log | tail -12 | cut -c1-200
