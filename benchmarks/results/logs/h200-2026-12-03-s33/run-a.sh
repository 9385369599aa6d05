# session 33, call a: row_argmax (GPU tests of the reductions, slow sizes too; its sweep and the greedy-decoding table
# against torch's argmax and torch.compile's); end to end over a 4096 cache with the patched steps' greedy token by it
# (--argmax-ab: the int4 model with torch's argmax in the same run)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 170 python benchmarks/gpu_session.py $OUT/results --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
python - <<'PY'
import glob, json, os
for f in glob.glob(os.environ["OUT"] + "/results/*reductions.json"):
    d = json.load(open(f))
    for t, rows in d.get("tables", {}).items():
        for r in rows:
            print(r["shape"], r["provider"], round(r["graph_us"], 2), round(r["python_us"], 1))
    for r in d["rows"]:
        if r["shape"][1] in (32768, 131072) or r["provider"] == "rooftop":
            print(r["shape"], r["provider"], round(r["roofline_pct"], 1), r.get("graph_ms"))
PY
mkdir -p /tmp/e2e && tar xzf benchmarks/results/logs/h200-2026-12-03-s32/call-a/tuner-cache.tgz -C /tmp/e2e
ROOFTOP_CACHE_DIR=/tmp/e2e timeout 190 python benchmarks/e2e_decode.py $OUT --graphs --cache-len 4096 --repeats 2 \
    --argmax-ab > $OUT/e2e-graphs-4096.log 2>&1; echo "e2e 4096 rc $?"; tail -8 $OUT/e2e-graphs-4096.log | cut -c1-170
rm -f $OUT/results/*.csv $OUT/*.csv
