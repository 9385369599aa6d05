# session 28, call 5: end to end (as call 4, with the patched bf16 model compiled too) with each model's graph captured once (GraphedDecode), and stock and patched + int4
# with the step torch.compile'd (inductor, captured in the same hand-made graph); medians of three rounds
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 300 python benchmarks/e2e_decode.py $OUT --graphs --row-pdl-ab --compile --repeats 3 > $OUT/e2e-graphs.log 2>&1
echo "e2e rc $?"; grep -v Warn $OUT/e2e-graphs.log | tail -12 | cut -c1-170
