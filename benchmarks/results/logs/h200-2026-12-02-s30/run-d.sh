# session 30, call d: the model profiler's test on the GPU (rows shown on failure); end-to-end decode at the default
# cache and over 4096 with decode_attention's idle splits ending early (call c's change), SDPA's decode row beside
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache $OUT/tests && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
timeout 100 python -m pytest tests/test_profile.py tests/test_cli.py -q -k "tiny" -p no:cacheprovider -rf \
    > $OUT/tests/profile.txt 2>&1; tail -1 $OUT/tests/profile.txt; grep -o "KernelRow([^)]*)" $OUT/tests/profile.txt | head -12
timeout 200 python benchmarks/e2e_decode.py $OUT --graphs --sdpa-decode-ab --compile --repeats 3 \
    > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"; tail -10 $OUT/e2e-graphs.log | cut -c1-170
timeout 150 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --sdpa-decode-ab --repeats 3 \
    > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -8 $OUT/e2e-graphs-4096.log | cut -c1-170
rm -f $OUT/*.csv
