"""Session 83: decode_attention at heads of 512 (Gemma 4's full layers: 32 query heads over 4 kv heads), bf16 and
fp8 caches, against SDPA's default over the full cache; BLOCK_N (keys a step: D > 256 takes BLOCK_N // 4) and
NUM_WARPS varied. Prints us by graph replay and the caches' TB/s."""
import torch
import torch.nn.functional as F

from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _support as sp
from rooftop.ops import decode_attention as dm

SHAPES = ((1, 32, 4, 32768, 512), (8, 32, 4, 8192, 512), (32, 32, 4, 2048, 512), (8, 32, 4, 8192, 256))
real_fit = sp.fitting_stages
seen = {}


def spy(kernel, *a, **kw):
    stages, compiled = real_fit(kernel, *a, **kw)
    seen["cfg"] = (stages, getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None),
                   getattr(compiled, "resident_per_sm", None))
    return stages, compiled


dm.fitting_stages = spy
print(f"{'shape':>24s} {'cache':>5s} {'BN':>3s} {'w':>2s} {'us':>8s} {'TB/s':>6s}  stages/regs/spills/resident")
for B, Hq, Hkv, L, D in SHAPES:
    q = torch.randn(B, Hq, 1, D, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(B, Hkv, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    lengths = torch.full((B,), L, dtype=torch.int32, device="cuda")
    k8, v8 = dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64)
    name = f"{B}x{Hq}/{Hkv}x{L}x{D}"
    try:
        us = graph_replay_us([lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)], 20)
        print(f"{name:>24s} {'bf16':>5s} {'sdpa':>6s} {us:8.1f} {4 * k.numel() / us / 1e6:6.2f}")
    except Exception as e:  # noqa: BLE001 (a backend that refuses D = 512)
        print(f"{name:>24s} sdpa: {type(e).__name__} {str(e)[:80]}")
    for cache, kk, vv, kw in (("bf16", k, v, {}), ("fp8", k8, v8, dict(k_scale=1 / 64, v_scale=1 / 64))):
        for block_n in ((64, 128, 256) if D > 256 else (128,)):
            for warps in (4, 8):
                dm.BLOCK_N, dm.NUM_WARPS = block_n, warps
                try:
                    ref = dm.decode_attention(q, kk, vv, lengths, **kw)
                    us = graph_replay_us([lambda: dm.decode_attention(q, kk, vv, lengths, **kw)], 20)
                except Exception as e:  # noqa: BLE001 (out of resources)
                    print(f"{name:>24s} {cache:>5s} {dm._block_n(D):3d} {warps:2d} {type(e).__name__}")
                    continue
                bytes_ = kk.numel() * kk.element_size() * 2
                print(f"{name:>24s} {cache:>5s} {dm._block_n(D):3d} {warps:2d} {us:8.1f} {bytes_ / us / 1e6:6.2f}  "
                      f"{seen.get('cfg')}")
dm.BLOCK_N, dm.NUM_WARPS = 128, 4
