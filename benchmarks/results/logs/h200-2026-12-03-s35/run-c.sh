# session 35, call c: row reductions on chip among many rows up to 65536 columns (ONCHIP_MANY_MAX; was the looped
# path past 32768): GPU tests, an A / B, then the reductions sweep (every op) into the results; argmax at 8192 columns
# with 16 / 8 elements a thread (A / B)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_reductions.py > $OUT/tests/test_reductions.txt 2>&1
echo "tests rc $?: $(tail -1 $OUT/tests/test_reductions.txt)"; grep "^FAILED" $OUT/tests/test_reductions.txt | cut -c1-200 | head
timeout 120 python - <<'PY' 2>&1 | tee $OUT/onchip-many-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("op M x N: GPU us (graph replay over 2 inputs), ONCHIP_MANY_MAX 65536 (on chip) / 32768 (looped), % of 4220 GB/s")
for m, n in [(2048, 65536), (512, 65536), (300, 65536), (4096, 49152)]:
    xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    for op in ("row_sum", "row_max", "row_norm"):
        fn, t = getattr(rooftop, op), []
        for most in (65536, 32768):
            reductions.ONCHIP_MANY_MAX = most
            _support.clear_plans()
            t.append(graph_replay_us([lambda x=x: fn(x) for x in xs], repeat=10))
        print(op, (m, n), " / ".join(f"{v:.1f} ({m * n * 2 / v / 1e3 / 4220 * 100:.1f}%)" for v in t),
              reductions.reduce_path(m, n, 132))
    reductions.ONCHIP_MANY_MAX = 65536
    _support.clear_plans()
print("argmax 16384 x 8192: us with ARGMAX_ELEMS_PER_THREAD 32 / 16 / 8")
x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
t = []
for ept in (32, 16, 8):
    reductions.ARGMAX_ELEMS_PER_THREAD = ept
    _support.clear_plans()
    assert torch.equal(rooftop.row_argmax(x), x.argmax(-1))
    t.append(graph_replay_us([lambda: rooftop.row_argmax(x)], repeat=10))
print(" / ".join(f"{v:.1f} ({x.numel() * 2 / v / 1e3 / 4220 * 100:.1f}%)" for v in t))
reductions.ARGMAX_ELEMS_PER_THREAD = 32
PY
timeout 330 python benchmarks/gpu_session.py $OUT/results --families reductions --no-ncu \
    > $OUT/session-reductions.log 2>&1; echo "reductions session rc $?"
grep -a -E "^row_[a-z]+ +[0-9]" $OUT/session-reductions.log | sed -E 's/ +\|.*//' | cut -c1-120
rm -f $OUT/results/*.csv
