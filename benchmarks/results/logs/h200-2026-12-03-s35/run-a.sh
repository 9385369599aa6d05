# session 35, call a: row_argmax's on-chip launch shape at 512-8192 columns (A / B of ONCHIP_BLOCK_ELEMS and
# ARGMAX_ELEMS_PER_THREAD: 1-2 warps a program keep each row's reductions inside a warp), then the argmax sweep with
# session 34's ARGMAX_ONCHIP_MAX (its 4096 x 32768 row was measured only by A / B)
export ROOFTOP_CACHE_DIR=/tmp/cache PYTHONPATH=$PWD/src:$PWD/benchmarks PYTHONUNBUFFERED=1
timeout 150 python - <<'PY' 2>&1 | tee $OUT/argmax-launch-ab.txt
import torch, rooftop
from rooftop.ops import reductions, _support
from rooftop.bench.timing import graph_replay_us
shapes = [((1 << 27) // n, n) for n in (512, 1024, 2048, 4096, 8192)]
variants = [(4096, 32), (1024, 32), (2048, 32), (2048, 64), (4096, 64), (8192, 64)]
print("argmax, M x N (M N = 2^27, bf16): GPU us (graph replay) for ONCHIP_BLOCK_ELEMS / ARGMAX_ELEMS_PER_THREAD",
      variants, "and % of a 4220 GB/s read")
for m, n in shapes:
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.argmax(x, -1)
    out = []
    for block, ept in variants:
        reductions.ONCHIP_BLOCK_ELEMS, reductions.ARGMAX_ELEMS_PER_THREAD = block, ept
        _support.clear_plans()
        assert torch.equal(rooftop.row_argmax(x), ref)
        out.append(graph_replay_us([lambda: rooftop.row_argmax(x)], repeat=10))
    print((m, n), " ".join(f"{t:.1f} ({x.numel() * 2 / t / 1e3 / 4220 * 100:.0f}%)" for t in out))
    reductions.ONCHIP_BLOCK_ELEMS, reductions.ARGMAX_ELEMS_PER_THREAD = 4096, 32
    _support.clear_plans()
PY
timeout 170 python benchmarks/gpu_session.py $OUT/argmax --families reductions --ops row_argmax --no-ncu \
    > $OUT/session-argmax.log 2>&1; echo "argmax session rc $?"
grep -a -E "^row_argmax " $OUT/session-argmax.log | sed -E 's/ +\|.*//' | cut -c1-110
rm -f $OUT/argmax/*.csv
