# session 31, call b: decode_attention merged by its last split (one kernel, no merge launch): GPU tests; the split
# probe again (call a's table, same script) and the merge-chunk sweep; the family's session run (results file); the
# int4 model's step over a 4096 cache, by part, merged into that e2e results file
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && tar xzf benchmarks/results/logs/h200-2026-12-02-s28/call-b/tuner-cache-e2e.tgz -C /tmp/cache
FILES="tests/test_decode_attention.py tests/test_integrations.py" bash benchmarks/gpu_tests.sh "not slow" 200
timeout 120 python benchmarks/probe_decode_splits.py $OUT > $OUT/probe-decode-splits.log 2>&1
echo "probe rc $?"; grep -v "Warn\|warn" $OUT/probe-decode-splits.log | tail -30 | cut -c1-200
timeout 150 python benchmarks/gpu_session.py $OUT/results --families decode_attention > $OUT/session.log 2>&1
echo "session rc $?"; grep -v "Warn\|warn\|return F\|^ *$" $OUT/session.log | grep -A30 "copy .* GB/s; rooftop" | cut -c1-180
python -c "import json, glob; d = json.load(open(glob.glob('$OUT/results/*decode_attention.json')[0]))
for r in list(d['tables'].values())[0]: print(r['shape'][2], round(r['rooftop_us'], 2), round(r['sdpa_masked_us'], 2))"
cp benchmarks/results/h200-2026-12-02-e2e_decode_cache4096.json $OUT/
timeout 150 python benchmarks/probe_decode_step.py --top 24 --cache-len 4096 \
    --merge-into $OUT/h200-2026-12-02-e2e_decode_cache4096.json > $OUT/probe-decode-step.log 2>&1; echo "step rc $?"
cut -c1-150 $OUT/probe-decode-step.log | grep -v Warning | tail -14
rm -f $OUT/results/*.csv
