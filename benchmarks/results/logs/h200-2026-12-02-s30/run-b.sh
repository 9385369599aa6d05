# session 30, call b: GPU tests after patch_model's decode_attention default, the compiled decode step, the profiler's
# unlinked-kernel attribution; end-to-end decode at the default cache with SDPA's decode row and the compiled steps;
# the decode-step probe over a static cache of 4096 merged into that results file
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
FILES="tests/test_integrations.py tests/test_cli.py tests/test_profile.py" bash benchmarks/gpu_tests.sh "not slow" 150
timeout 60 python -m pytest tests/test_decode_attention.py -q -k sm90 -p no:cacheprovider > $OUT/tests/sm90.txt 2>&1
echo "sm90 compile: $(tail -1 $OUT/tests/sm90.txt)"
timeout 240 python benchmarks/e2e_decode.py $OUT --graphs --sdpa-decode-ab --compile --repeats 3 \
    > $OUT/e2e-graphs.log 2>&1; echo "e2e rc $?"
tail -10 $OUT/e2e-graphs.log | cut -c1-170
cp benchmarks/results/h200-2026-12-02-e2e_decode_cache4096.json $OUT/
timeout 150 python benchmarks/probe_decode_step.py --top 24 --cache-len 4096 \
    --merge-into $OUT/h200-2026-12-02-e2e_decode_cache4096.json > $OUT/probe-decode-step.log 2>&1; echo "probe rc $?"
cut -c1-150 $OUT/probe-decode-step.log | grep -v Warning | tail -14
rm -f $OUT/*.csv  # a header only (e2e results have no op rows): 8 files back at most
