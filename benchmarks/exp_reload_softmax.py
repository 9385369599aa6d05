"""Experiment: a "reload" softmax (torch.compile's RMSNorm shape, NOTES.md items 69 / 71) at N = 16384-65536 against
the library's paths, on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed: _autotune.time_ms).

Why: at 32768 / 65536 the library's softmax (the Gluon ring, softmax_sm90) runs 87.7 / 86.6% of copy (issue 2 asks
90%, and 2x torch.compile: 91.2 / 91.8%); the ring with a copy-only consumer tops out at ~93.5% (NOTES item 58), so
its consumers leave the gap. torch.compile's RMSNorm at 32768 (one row a program, 32 warps, pass 2 re-loading the row
from L1 / L2 rather than keeping it: two programs an SM) reaches ~95%. This kernel is that shape for softmax: pass 1
loads the row's PARTS tiles (evict_last) and folds each tile's (max, sum of exp) into the row's; pass 2 loads them
again (evict_first), writes exp(x - max) / sum. HBM traffic: x read once, y written once; the re-read is the
program's own bytes of a moment ago (L1 / L2): at 65536, 132 SMs x 2 programs x 128 KB = 34 MB in flight.
Prediction: 90-94% at 32768 if the re-read hits and two 32-warp programs an SM hide the latency (softmax's two exps
an element are 8 of the SM's 16 MUFU lanes a clock at the copy rate); at 65536 lower (the L2 footprint).
Usage: PYTHONPATH=src python benchmarks/exp_reload_softmax.py OUT_DIR [--widths 16384,32768,65536]
(prints a table last, writes exp-reload-softmax.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from rooftop.ops import _autotune
from rooftop.ops import softmax as sm
from rooftop.ops._support import launch

ELEMENTS = 1 << 27


@triton.jit
def _exp(x):
    return tl.exp2(x * 1.4426950408889634)


@triton.jit
def _write_rows(x_row, y_row, N, row_max, inv_sum, TILE: tl.constexpr, PARTS: tl.constexpr):
    """Pass 2 of both reload kernels: the row again (L1 / L2), y = exp(x - max) / sum written once."""
    cols = tl.arange(0, TILE)
    for part in tl.static_range(PARTS):
        offs = part * TILE + cols
        x = tl.load(x_row + offs, mask=offs < N, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tl.store(y_row + offs, (_exp(x - row_max) * inv_sum).to(y_row.dtype.element_ty), mask=offs < N)


@triton.jit
def _softmax_reload_kernel(x_ptr, y_ptr, N, x_stride, y_stride, TILE: tl.constexpr, PARTS: tl.constexpr):
    # Row program_id(0) in PARTS tiles of TILE; nothing of the row is held across the passes.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    y_row = y_ptr + row * y_stride
    cols = tl.arange(0, TILE)
    m = -float("inf")
    s = 0.0
    for part in tl.static_range(PARTS):  # pass 1: the row's (max, sum of exp), tile by tile
        offs = part * TILE + cols
        x = tl.load(x_row + offs, mask=offs < N, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        ref = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * _exp(m - ref) + tl.sum(_exp(x - ref), axis=0)
        m = m_new
    _write_rows(x_row, y_row, N, m, 1.0 / s, TILE, PARTS)


@triton.jit
def _softmax_reload_lanes_kernel(x_ptr, y_ptr, N, x_stride, y_stride, TILE: tl.constexpr, PARTS: tl.constexpr):
    # As _softmax_reload_kernel, but pass 1 keeps a (max, sum of exp) per group of VEC adjacent values (a thread's
    # 16-byte load) across the tiles and merges them across the program once, after the last tile: no reduction
    # (a barrier) between the tiles, so that every tile's loads can issue up front (session 36: the RMSNorm reload
    # kernel with its squares summed into one vector ran 98.7% of copy at 32768, 93.2% reduced a tile at a time).
    VEC: tl.constexpr = 128 // x_ptr.dtype.element_ty.primitive_bitwidth
    GROUPS: tl.constexpr = TILE // VEC
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    y_row = y_ptr + row * y_stride
    cols = tl.arange(0, TILE)
    m = tl.full([GROUPS], -float("inf"), tl.float32)
    s = tl.zeros([GROUPS], tl.float32)
    for part in tl.static_range(PARTS):  # pass 1: each group's (max, sum of exp), tile by tile
        offs = part * TILE + cols
        x = tl.load(x_row + offs, mask=offs < N, other=-float("inf"), eviction_policy="evict_last").to(tl.float32)
        x = tl.reshape(x, (GROUPS, VEC))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        ref = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * _exp(m - ref) + tl.sum(_exp(x - ref[:, None]), axis=1)
        m = m_new
    row_max, row_sum = sm._merge_max_sum(m, s)
    _write_rows(x_row, y_row, N, row_max, 1.0 / row_sum, TILE, PARTS)


def reload_softmax(x, y, tile, warps, lanes=False):
    M, N = x.shape
    kernel = _softmax_reload_lanes_kernel if lanes else _softmax_reload_kernel
    launch(kernel, (M,), x, y, N, x.stride(0), y.stride(0), TILE=tile, PARTS=triton.cdiv(N, tile), num_warps=warps)


def variants(N):
    """(name, fn(x, y)) of the kernels timed at width N."""
    yield "library", lambda x, y: sm.softmax_rows(x, y, False)

    def no_gluon(x, y):
        sm.GLUON_ENABLED = False
        try:
            sm.softmax_rows(x, y, False)
        finally:
            sm.GLUON_ENABLED = True
    yield "triton_paths", no_gluon
    for tile in (8192, 16384, 32768):
        for warps in (16, 32):
            if tile <= N and tile // (32 * warps) in (8, 16, 32, 64) and N // tile <= 8:
                if (tile, warps) == (16384, 16):  # session 32's best of the form reduced a tile at a time
                    yield f"reload_t{tile}_w{warps}", (lambda t, w: lambda x, y: reload_softmax(x, y, t, w))(tile,
                                                                                                           warps)
                yield f"lanes_t{tile}_w{warps}", (lambda t, w: lambda x, y: reload_softmax(x, y, t, w, True))(tile,
                                                                                                        warps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--widths", default="16384,32768,65536")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    src = torch.empty(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_ms = _autotune.time_ms(lambda: dst.copy_(src))
    copy_gbps = 2 * src.numel() * 2 / copy_ms / 1e6
    rows = []
    for N in map(int, args.widths.split(",")):
        M = ELEMENTS // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) * 3
        ref = torch.softmax(x.float(), dim=-1)
        compiled = torch.compile(lambda t: torch.softmax(t, dim=-1))
        for name, fn in list(variants(N)) + [("compile", lambda x, y: y.copy_(compiled(x)))]:
            y = torch.empty_like(x)
            try:
                fn(x, y)
                torch.cuda.synchronize()
                err = float((y.float() - ref).abs().max())
                timed = (lambda: compiled(x)) if name == "compile" else (lambda: fn(x, y))
                ms = _autotune.time_ms(timed)
            except Exception as e:  # a variant that does not compile is reported, not fatal
                print(f"{name} N={N}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            gbps = 2 * x.numel() * 2 / ms / 1e6
            rows.append(dict(N=N, M=M, variant=name, ms=ms, gbps=gbps, pct_copy=100 * gbps / copy_gbps, max_err=err))
            print(json.dumps(rows[-1]), flush=True)
        torch._dynamo.reset()
    (out / "exp-reload-softmax.json").write_text(json.dumps(dict(copy_gbps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (max abs err)")
    for N in sorted({r["N"] for r in rows}):
        print(f"N={N}: " + "  ".join(f"{r['variant']} {r['pct_copy']:.1f} ({r['max_err']:.1e})"
                                     for r in rows if r["N"] == N))


if __name__ == "__main__":
    main()
