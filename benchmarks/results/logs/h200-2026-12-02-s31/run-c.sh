# session 31, call c: decode_attention with a sequence of at most two key tiles as one split, merge chunks of 4096
# partials: GPU tests; the split probe; the family's session run (results file); end to end over a 4096 cache
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
FILES="tests/test_decode_attention.py" bash benchmarks/gpu_tests.sh "not slow" 170
timeout 90 python benchmarks/probe_decode_splits.py $OUT > $OUT/probe-decode-splits.log 2>&1
echo "probe rc $?"; grep -v "Warn\|warn" $OUT/probe-decode-splits.log | grep "B=  1\|B=  8\|merge" | cut -c1-200
timeout 120 python benchmarks/gpu_session.py $OUT/results --families decode_attention > $OUT/session.log 2>&1
echo "session rc $?"; grep -v "Warn\|warn\|return F\|^ *$" $OUT/session.log | grep "_b1 \|graph" | cut -c1-150 | tail -8
python -c "import json, glob; d = json.load(open(glob.glob('$OUT/results/*decode_attention.json')[0]))
for r in list(d['tables'].values())[0]: print(r['shape'][2], round(r['rooftop_us'], 2), round(r['sdpa_masked_us'], 2))"
timeout 170 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --sdpa-decode-ab --repeats 3 \
    > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -8 $OUT/e2e-graphs-4096.log | cut -c1-170
rm -f $OUT/*.csv $OUT/results/*.csv
