# session 34, call d: row_argmax without its own split rule (rows up to ONCHIP_MAX on chip for every reduction): GPU
# tests of the reductions, the greedy table and the argmax rows again; argmax at N = 32768 on chip or not (A / B)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 60 python - <<'PY' 2>&1 | tee $OUT/onchip-max-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("shape: argmax us with ONCHIP_MAX 32768 / 16384 (graph replay), the path of each")
for shape in [(4096, 32768), (1, 32000), (8, 32768), (64, 32000), (512, 32768)]:
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    t, paths = [], []
    for most in (32768, 16384):
        reductions.ONCHIP_MAX = most
        _support.clear_plans()
        t.append(graph_replay_us([lambda: rooftop.row_argmax(x)], repeat=20))
        paths.append(reductions.reduce_path(*shape, 132))
    reductions.ONCHIP_MAX = 32768
    _support.clear_plans()
    print(shape, " / ".join(f"{v:.2f}" for v in t), paths)
PY
timeout 150 python benchmarks/gpu_session.py $OUT/argmax --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
grep -a -E "^row_argmax " $OUT/session-argmax.log | sed -E 's/ +\|.*//' | cut -c1-110
python - <<'PY'
import glob, json, os
for f in glob.glob(os.environ["OUT"] + "/argmax/*reductions.json"):
    for t, rows in json.load(open(f)).get("tables", {}).items():
        for r in rows:
            print(r["shape"], r["provider"], round(r["graph_us"], 2), round(r["python_us"], 1))
PY
rm -f $OUT/argmax/*.csv
