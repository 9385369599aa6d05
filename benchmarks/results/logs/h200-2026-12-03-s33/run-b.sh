# session 33, call b: row_argmax's on-chip kernel by one (key, column) reduction, its looped / split kernels 3 programs
# an SM, few wide rows split (SPLIT_MIN_N): GPU tests of the reductions; small-M rows split or on chip (A / B); the
# reductions family re-measured (every op: the kernels now launch as PDL dependents) with the greedy-decoding table
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 120 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 90 python - <<'PY' 2>&1 | tee $OUT/split-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("shape fn: split-rule us / on-chip us (graph replay)")
for shape in [(1, 16384), (1, 32000), (1, 32768), (4, 32000), (8, 32768), (64, 32000)]:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    for name, fn in (("row_argmax", rooftop.row_argmax), ("row_max", rooftop.row_max), ("row_sum", rooftop.row_sum)):
        t = []
        for split_min in (reductions.SPLIT_MIN_N, 1 << 30):
            reductions.SPLIT_MIN_N = split_min
            _support.clear_plans()
            t.append(graph_replay_us([lambda: fn(x)]))
        reductions.SPLIT_MIN_N = 16384
        print(shape, name, " / ".join(f"{v:.2f}" for v in t))
PY
timeout 200 python benchmarks/gpu_session.py $OUT/results --families reductions --no-ncu \
    > $OUT/session-reductions.log 2>&1; echo "reductions session rc $?"
grep -E "^row_" $OUT/session-reductions.log | sed -E 's/ +\|.*//' | cut -c1-110
python - <<'PY'
import glob, json, os
for f in glob.glob(os.environ["OUT"] + "/results/*reductions.json"):
    for t, rows in json.load(open(f)).get("tables", {}).items():
        for r in rows:
            print(r["shape"], r["provider"], round(r["graph_us"], 2), round(r["python_us"], 1))
PY
rm -f $OUT/results/*.csv $OUT/*.csv
