"""Experiment: LayerNorm's wide rows (no residual) as RMSNorm's reload kernel runs them, on the H200, bf16,
M * N = 2^27, GPU time (graph replay, L2 flushed), % of a same-run copy.

Why: at 65536 RMSNorm's reload kernel runs 96.7% of copy (one program an SM, the row kept in L1), LayerNorm's
Welford kernel 71-81% however launched (session 38, NOTES items 244, 246) and the Gluon ring 85%. The two differ in
pass 1: RMSNorm folds each tile into one running sum (an FMA a value, every tile's loads issued up front), Welford
into each lane's (mean, M2): a chain of four dependent operations a tile through the running mean, and a reciprocal.
This kernel keeps Welford's robustness without the chain: lane l shifts its values by its own first one, x0_l (the
first tile's value in its column), and sums d = x - x0_l and d^2 (two FMAs a value, no dependency on a running mean);
after the row each lane's (n, mean - s, M2) = (n, x0_l - s + S1 / n, S2 - S1^2 / n), s the row's first value, merge by
Chan's formula in one reduction (layer_norm._chan_merge) as the Welford kernel's lanes do. A lane's cancellation in
S2 - S1^2 / n is bounded by its count (n (x0_l - mean_l)^2 <= (n - 1) M2_l): at most 8 values a lane at 65536 in
8192-wide tiles, so the statistics keep fp32 precision for any row (the Welford kernel's bound), unlike sums shifted
by one value for the whole row (a first value far from the rest: Gluon's path shifts by the first chunk's mean).
Pass 2 as the Welford kernel's: y = ((x - s) rstd - centre) w + b, w and b past L1 ("l2") or through it.
Prediction: >= 90% of copy at 49152-65536 with one program an SM (maxnreg=64), >= 93% at 32768-40960 with two.
Variants: the library; "sums" (two programs an SM), "sums_r64" (one), each with w and b through L1 ("_l1") or past it.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_sums.py OUT_DIR [--widths 32768,65536]
(prints a table last, writes exp-ln-sums.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

import rooftop
from exp_norm_reload import ELEMENTS, copy_bandwidth, measured
from rooftop.ops import layer_norm as ln
from rooftop.ops._support import launch, load_tile_again
from rooftop.ops.layer_norm import _chan_merge

TILE, WARPS = 8192, 32


@triton.jit
def _ln_sums_reload_kernel(x_ptr, w_ptr, b_ptr, y_ptr, x_stride, y_stride, eps, N: tl.constexpr, TILE: tl.constexpr,
                           PARAM_POLICY: tl.constexpr):
    # Row program_id(0), N a multiple of TILE. HBM: x read once, y written once; pass 2 re-reads x from L1 / L2.
    tl.static_assert(N % TILE == 0)
    PARTS: tl.constexpr = N // TILE
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    y_row = y_ptr + row * y_stride
    cols = tl.arange(0, TILE)
    shift = tl.load(x_row).to(tl.float32)  # s: the row's first value
    first = tl.load(x_row + cols, eviction_policy="evict_last").to(tl.float32)  # x0_l, the lane's shift
    s1 = tl.zeros([TILE], tl.float32)
    s2 = tl.zeros([TILE], tl.float32)
    for part in tl.static_range(1, PARTS):  # no reduction across the program: every tile's loads up front
        d = tl.load(x_row + part * TILE + cols, eviction_policy="evict_last").to(tl.float32) - first
        s1 += d
        s2 += d * d
    count = tl.full([TILE], PARTS, tl.float32)
    lane_mean = (first - shift) + s1 / PARTS  # of x - s
    lane_m2 = tl.maximum(s2 - s1 * s1 / PARTS, 0.0)
    _, row_mean, row_m2 = tl.reduce((count, lane_mean, lane_m2), 0, _chan_merge)
    rstd = tl.rsqrt(row_m2 / N + eps)
    centre = row_mean * rstd
    for part in tl.static_range(PARTS):  # pass 2: y = ((x - s) rstd - centre) w + b
        offs = part * TILE + cols
        x = load_tile_again(x_row, offs, None, "evict_first")
        y = ((x - shift) * rstd - centre) * load_tile_again(w_ptr, offs, None, PARAM_POLICY)
        y += load_tile_again(b_ptr, offs, None, PARAM_POLICY)
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty))


def sums_layer_norm(x, w, b, policy: str, maxnreg):
    """y = layer_norm(x, w, b) of the [M, N] rows x through the experiment's kernel."""
    y = torch.empty_like(x)
    launch(_ln_sums_reload_kernel, (x.shape[0],), x, w, b, y, x.stride(0), y.stride(0), 1e-5, N=x.shape[1],
           TILE=TILE, PARAM_POLICY=policy, num_warps=WARPS, **({"maxnreg": maxnreg} if maxnreg else {}))
    return y


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default="32768,40960,49152,65536")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for N in map(int, args.widths.split(",")):
        # rows centred on 1e4 (bf16 values 64 apart there): the statistics must keep the spread
        x = (1e4 + 64 * torch.randn(ELEMENTS // N, N, device="cuda")).to(torch.bfloat16)
        w, b = torch.randn(N, device="cuda", dtype=x.dtype), torch.randn(N, device="cuda", dtype=x.dtype)
        ref = ln.layer_norm_eager(x, w, b)
        rows.append(measured("layer_norm", N, "library", lambda: rooftop.layer_norm(x, w, b), ref, 2 * x.nbytes,
                             copy_gbps))
        for name, maxnreg in (("sums", None), ("sums_r64", 64)):
            for suffix, policy in (("", "l2"), ("_l1", "evict_last")):
                run = (lambda p=policy, m=maxnreg: sums_layer_norm(x, w, b, p, m))
                rows.append(measured("layer_norm", N, name + suffix, run, ref, 2 * x.nbytes, copy_gbps))
        (out / "exp-ln-sums.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27 (err: relative, against eager)")
    for N in map(int, args.widths.split(",")):
        print(f"layer_norm {N:6d} " + "  ".join(f"{r['provider']} {r['pct']:5.1f} ({r['err']:.0e})" for r in rows
                                              if r["N"] == N))


if __name__ == "__main__":
    main()
