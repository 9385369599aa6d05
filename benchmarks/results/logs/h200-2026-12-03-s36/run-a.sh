# session 36, call a: timings first (GPU alone), then the whole GPU test suite (xdist, 8 workers).
# 1. looped / split reductions: the next tile's load before the current fold (LOOPED_LOAD_FIRST) against after,
#    with 8 KB and 16 KB tiles; 2. a decode step's append, contiguous / paged (session 35's call f);
# 3. quant_matmul's host path by batch (do_bench from Python ran 78.7 us at 64 x 4096^2, graph 15.4 us).
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
timeout 150 python - <<'PY' 2>&1 | tee $OUT/looped-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("looped / split reductions: GPU us (graph replay over 2 inputs); load first / after, tile 8 KB / 16 KB; "
      "% of a 4220 GB/s read")
cases = [(1024, 131072), (512, 262144), (8, 1048576), (64, 131072)]
for m, n in cases:
    xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    print("path", reductions.reduce_path(m, n, 132))
    for op in ("row_sum", "row_max", "row_mean", "row_norm"):
        fn, t = getattr(rooftop, op), []
        for first in (True, False):
            for tile in (8192, 16384):
                reductions.LOOPED_LOAD_FIRST, reductions.LOOPED_TILE_BYTES = first, tile
                _support.clear_plans()
                t.append(graph_replay_us([lambda x=x: fn(x) for x in xs], repeat=10))
        reductions.LOOPED_LOAD_FIRST, reductions.LOOPED_TILE_BYTES = True, 8192
        print(op, (m, n), " / ".join(f"{v:.1f} ({m * n * 2 / v / 1e3 / 4220 * 100:.1f}%)" for v in t))
PY
timeout 60 python - <<'PY' 2>&1 | tee $OUT/append-paged.txt
import torch, rooftop
from rooftop.bench.timing import graph_replay_us
print("a decode step's append (B = 8, Hkv = 8, D = 128, bf16, cache of 4096 a sequence): GPU us (graph replay)")
B, H, D, L = 8, 8, 128, 4096
k, v = (torch.randn(B, H, 1, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
q = torch.randn(B, 32, 1, D, device="cuda", dtype=torch.bfloat16)
cos, sin = torch.randn(1, D, device="cuda", dtype=torch.bfloat16), torch.randn(1, D, device="cuda", dtype=torch.bfloat16)
for page in (None, 16, 256):
    if page is None:
        caches = [torch.zeros(B, H, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        table = None
    else:
        caches = [torch.zeros(B * L // page, H, page, D, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        table = torch.randperm(B * L // page, device="cuda").to(torch.int32).view(B, L // page)
    lengths = torch.full((B,), 100, device="cuda", dtype=torch.int32)
    t1 = graph_replay_us([lambda: (rooftop.append_kv(*caches, k, v, lengths, block_table=table),
                                   lengths.sub_(1))], repeat=20)
    t2 = graph_replay_us([lambda: (rooftop.apply_rope_append_kv(q, k, v, cos, sin, *caches, lengths,
                                                                block_table=table), lengths.sub_(1))], repeat=20)
    print("page", page, f"append_kv {t1:.2f} us, apply_rope_append_kv {t2:.2f} us (each with a lengths.sub_ kernel)")
PY
timeout 120 python - <<'PY' 2>&1 | tee $OUT/quant-host.txt
import cProfile, pstats, io, torch, rooftop
from rooftop.bench.timing import graph_replay_us, python_launch_us
print("quant_matmul int4 g128, N = K = 4096: us a call from Python (back to back) / GPU (graph replay)")
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 4096 ** -0.5
qw = rooftop.quantize_weight(w, 4, 128)
for m in (1, 16, 64, 256):
    x = torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16)
    fn = lambda: rooftop.quant_matmul(x, qw)
    host = python_launch_us(fn, calls=200)
    print(f"M {m}: python {host:.1f} us, graph {graph_replay_us([fn], repeat=20):.1f} us")
    if m in (64, 256):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(14)
        print("\n".join(l for l in s.getvalue().splitlines() if l.strip())[:3500])
PY
nvidia-smi --query-gpu=name,memory.used --format=csv
timeout 330 python -m pytest -q -p no:cacheprovider -n 8 --timeout 240 -rfE tests/ --junitxml=$OUT/tests/junit.xml \
    > $OUT/tests/all.txt 2>&1
echo "suite rc $?: $(tail -1 $OUT/tests/all.txt)"; grep -E "^(FAILED|ERROR)" $OUT/tests/all.txt | cut -c1-220 | head -30
