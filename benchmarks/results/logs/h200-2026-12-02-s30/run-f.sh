# session 30, call f: the profiler's op ranges on the GPU (tests; a patched transformers Llama's profile), then
# end-to-end decode at batch 8 over a static cache of 4096 (decode_attention against SDPA's decode row)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 100 python -m pytest tests/test_profile.py tests/test_cli.py -q -k "tiny or attribute or patched or ranges" \
    -p no:cacheprovider -rf 2>&1 | tail -3 | cut -c1-600
COLUMNS=160 timeout 60 python -m rooftop profile --model llama --patch --batch 1 --seq 128 --steps 2 --top 16 2>&1 \
    | grep -v "Warn\|warn\|USDT" | cut -c1-170
timeout 150 python benchmarks/e2e_decode.py $OUT --graphs --batch 8 --cache-len 4096 --sdpa-decode-ab --repeats 2 \
    > $OUT/e2e-graphs-b8.log 2>&1; echo "e2e rc $?"; tail -8 $OUT/e2e-graphs-b8.log | cut -c1-170
rm -f $OUT/*.csv
