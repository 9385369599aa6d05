# session 35, call f: GPU tests of the session's last changes (append_kv / apply_rope_append_kv into a paged cache,
# the lengths' close as one helper, the HF rewrite's refusals); a decode step's append, contiguous or paged
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
mkdir -p $OUT/tests
# (the first try lost the machine mid-call: the tests trimmed to the changed paths)
for t in "test_rope -k append" "test_decode_attention -k append_or_paged" "test_integrations"; do
    set -- $t; name=$1; shift
    timeout 100 python -m pytest -q -p no:cacheprovider tests/$name.py ${2:+-k "${2//_or_/ or }"} \
        > $OUT/tests/$name.txt 2>&1
    echo "$name rc $?: $(tail -1 $OUT/tests/$name.txt)"; grep "^FAILED" $OUT/tests/$name.txt | cut -c1-200 | head
done
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
timeout 90 python - <<'PY' 2>&1 | tee $OUT/looped-tile-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
print("looped reductions: GPU us (graph replay over 2 inputs), LOOPED_TILE_BYTES 8192 (library) / 16384, "
      "PROGRAMS_PER_SM 4 / 3 with 16384; % of a 4220 GB/s read")
for m, n in [(1024, 131072), (512, 262144)]:
    xs = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    for op in ("row_sum", "row_max", "row_norm"):
        fn, t = getattr(rooftop, op), []
        for tile, per_sm in ((8192, 4), (16384, 4), (16384, 3)):
            reductions.LOOPED_TILE_BYTES, reductions.PROGRAMS_PER_SM = tile, per_sm
            _support.clear_plans()
            t.append(graph_replay_us([lambda x=x: fn(x) for x in xs], repeat=10))
        print(op, (m, n), " / ".join(f"{v:.1f} ({m * n * 2 / v / 1e3 / 4220 * 100:.1f}%)" for v in t))
        reductions.LOOPED_TILE_BYTES, reductions.PROGRAMS_PER_SM = 8192, 4
PY
