# session 35, call e: the decode step by part over a 4096 cache with each attention's RoPE and static-cache append as
# one kernel (apply_rope_append_kv), into a copy of the e2e results file (session 33 call d's e2e tuner cache)
export PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s33/call-d/tuner-cache-e2e.tgz -C /tmp/e2e
cp benchmarks/results/h200-2026-12-03-e2e_decode_cache4096.json $OUT/e2e-with-step-table.json
ROOFTOP_CACHE_DIR=/tmp/e2e timeout 200 python benchmarks/probe_decode_step.py --cache-len 4096 \
    --merge-into $OUT/e2e-with-step-table.json > $OUT/probe-step-4096.log 2>&1; echo "probe rc $?"
tail -14 $OUT/probe-step-4096.log | cut -c1-160
