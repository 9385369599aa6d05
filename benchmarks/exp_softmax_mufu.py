"""Experiment: is softmax's reload kernel with one program an SM held by its exponentials? H200, bf16, M * N = 2^27,
GPU time (graph replay, L2 flushed), % of a same-run copy.

At 65536 the reload kernel with one program an SM (maxnreg=64, the row kept in L1 between the passes) ran 70.5% of
copy (session 37) where RMSNorm's ran 96.8 and LayerNorm's without weight and bias 96.3 (session 39, call b): the
same structure, so the difference is the work a value. Softmax's pass 1 takes one exponential a value (and one a
group of 8), pass 2 another: ~2.1 MUFU.EX2 a value at 16 a clock an SM, ~8700 cycles of a 65536-row (the row's
copy time at the H200's bandwidth ~14000-16000 cycles), issued in pass 1 and pass 2 of the same row with nothing
overlapping them when an SM holds one program.
Variants of the reload kernel (library's shape: 8192-wide tiles over 32 warps; "_r64": one program an SM):
- "mufu": as the library (exp2 on MUFU.EX2, fp32);
- "poly": pass 1's exponentials (those of the sums only) on the FMA pipe, 2^t by Cody-Waite and a cubic
  (relative error 7.5e-5 a term; the sum's the same at most): ~9 FMA-pipe instructions a value instead of one MUFU
  (offline: ex2.approx.f16x2 is two MUFU ops on sm_90, no saving);
- "noexp" (diagnostic, wrong values): pass 1's exponentials replaced by their argument: what the kernel runs at
  without them.
Predicted: if the exponentials hold the one-program kernel, "noexp_r64" >= 93% at 65536 and "poly_r64" >= 85%.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_softmax_mufu.py OUT_DIR [--widths 32768,65536]
(prints a table last, writes exp-softmax-mufu.json)
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
from rooftop.ops.softmax import _exp, _merge_max_sum

TILE, WARPS = 8192, 32


@triton.jit
def _exp2_poly(t):
    """2^t on the FMA pipe (Cody-Waite): t = j + f with j = round(t) (by adding 1.5 * 2^23), 2^f by a cubic (minimax
    on [-0.5, 0.5], relative error 7.5e-5), j added to the exponent bits; t clamped at -126 (2^t ~ 0 below)."""
    t = tl.maximum(t, -126.0)
    r = t + 12582912.0
    f = t - (r - 12582912.0)
    p = ((0.05517165313653135 * f + 0.2426111615007761) * f + 0.6932609919253176) * f + 0.9999280713051518
    return (p.to(tl.int32, bitcast=True) + (r.to(tl.int32, bitcast=True) << 23)).to(tl.float32, bitcast=True)


@triton.jit
def _exp_pass1(t, MODE: tl.constexpr):
    """e^t (t <= 0) for pass 1's sums by MODE (the docstring's variants)."""
    if MODE == "poly":
        e = _exp2_poly(t * 1.4426950408889634)
    elif MODE == "noexp":
        e = t
    else:
        e = _exp(t)
    return e


@triton.jit
def _softmax_reload_mufu_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, N: tl.constexpr, TILE: tl.constexpr,
                                MODE: tl.constexpr):
    # Row program_id(0), N a multiple of TILE; the library's _softmax_reload_kernel (LOG False) with pass 1's
    # exponentials by MODE. HBM: x read once, y written once; pass 2 re-reads x from L1 / L2.
    VEC: tl.constexpr = 8
    GROUPS: tl.constexpr = TILE // VEC
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    cols = tl.arange(0, TILE)
    m = tl.full([GROUPS], -float("inf"), tl.float32)
    s = tl.zeros([GROUPS], tl.float32)
    for part in tl.static_range(N // TILE):
        x = tl.load(x_row + part * TILE + cols, eviction_policy="evict_last")
        x = tl.reshape(x.to(tl.float32), (GROUPS, VEC))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        ref = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * _exp(m - ref) + tl.sum(_exp_pass1(x - ref[:, None], MODE), axis=1)
        m = m_new
    row_max, row_sum = _merge_max_sum(m, s)
    inv_sum = 1.0 / row_sum
    for part in tl.static_range(N // TILE):
        offs = part * TILE + cols
        x = tl.load(x_row + offs, eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + offs, (_exp(x - row_max) * inv_sum).to(y_ptr.dtype.element_ty))


def reload_softmax(x, mode: str, one_program: bool):
    """softmax(x) of the [M, N] rows x (N a multiple of TILE) through the experiment's kernel."""
    y = torch.empty_like(x)
    grid = (x.shape[0],)
    _softmax_reload_mufu_kernel[grid](x, y, x.stride(0), y.stride(0), N=x.shape[1], TILE=TILE, MODE=mode,
                                      num_warps=WARPS, **(dict(maxnreg=64) if one_program else {}))
    return y


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default="32768,49152,65536")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for N in map(int, args.widths.split(",")):
        x = 4 * torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.softmax(x.float(), dim=-1).to(x.dtype)
        rows.append(measured("softmax", N, "library", lambda: rooftop.softmax(x), ref, 2 * x.nbytes, copy_gbps))
        for mode in ("mufu", "poly", "noexp"):
            for one_program in (False, True):
                name = mode + ("_r64" if one_program else "")
                run = (lambda m=mode, o=one_program: reload_softmax(x, m, o))
                rows.append(measured("softmax", N, name, run, ref, 2 * x.nbytes, copy_gbps))
        (out / "exp-softmax-mufu.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27 (err: relative, against fp32)")
    for N in map(int, args.widths.split(",")):
        print(f"softmax {N:6d} " + "  ".join(f"{r['provider']} {r['pct']:5.1f} ({r['err']:.0e})" for r in rows
                                           if r["N"] == N))


if __name__ == "__main__":
    main()
