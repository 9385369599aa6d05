"""Experiment: softmax's reload kernel (softmax.py `_softmax_reload_kernel`: one row a program, the row re-read from
L1 / L2 in pass 2, pass 1's (max, sum) kept per 16-byte group across the tiles and merged once) against the paths it
replaced and torch.compile, on the H200, M * N = 2^27, GPU time (graph replay, L2 flushed: _autotune.time_ms).

Variants: the library as it dispatches; with the reload kernel off (Gluon at these widths); the Triton kernels alone
(Gluon off too); the reload kernel with other tiles / warp counts ("lanes_t<tile>_w<warps>", a 16- to 128-byte load a
thread a tile); torch.compile. Session 36 (journal item 232) predicted >= 93% of copy at 32768 for the kernel in
8192-value tiles over 32 warps; session 37's call a saw 97.7% (Gluon 89.9%), 99.9 / 95.7% at 24576 / 49152 and
74.2% at 65536, where two programs' rows (256 KB) no longer stay in L1 between the passes.
Usage: PYTHONPATH=src python benchmarks/exp_reload_softmax.py OUT_DIR [--widths 16384,32768,65536] [--dtype float32]
(prints a table last, writes exp-reload-softmax-<dtype>.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton

from rooftop.ops import _autotune
from rooftop.ops import softmax as sm
from rooftop.ops._support import launch

ELEMENTS = 1 << 27


def reload_softmax(x, y, tile, warps):
    """The library's reload kernel with another tile / warp count."""
    M, N = x.shape
    launch(sm._softmax_reload_kernel, (M,), x, y, N, x.stride(0), y.stride(0), LOG=False, TILE=tile,
           PARTS=triton.cdiv(N, tile), num_warps=warps)


def switched(**values):
    """softmax_rows with the module's switches set to `values` for the call."""
    def run(x, y):
        old = {k: getattr(sm, k) for k in values}
        for k, v in values.items():
            setattr(sm, k, v)
        try:
            sm.softmax_rows(x, y, False)
        finally:
            for k, v in old.items():
                setattr(sm, k, v)
    return run


def variants(N, itemsize):
    """(name, fn(x, y)) of the kernels timed at width N."""
    yield "library", lambda x, y: sm.softmax_rows(x, y, False)
    yield "reload_off", switched(RELOAD_MAX_BYTES=0)
    yield "triton_paths", switched(RELOAD_MAX_BYTES=0, GLUON_ENABLED=False)
    for tile in (4096, 8192, 16384, 32768):
        for warps in (16, 32):
            if tile <= N and tile // (32 * warps) * itemsize in (16, 32, 64, 128) and N // tile <= 8:
                yield f"lanes_t{tile}_w{warps}", (lambda t, w: lambda x, y: reload_softmax(x, y, t, w))(tile, warps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--widths", default="16384,32768,65536")
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
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
        x = torch.randn(M, N, device="cuda", dtype=dtype) * 3
        ref = torch.softmax(x.float(), dim=-1)
        compiled = torch.compile(lambda t: torch.softmax(t, dim=-1))
        for name, fn in list(variants(N, x.element_size())) + [("compile", lambda x, y: y.copy_(compiled(x)))]:
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
            gbps = 2 * x.nbytes / ms / 1e6
            rows.append(dict(N=N, M=M, dtype=args.dtype, variant=name, ms=ms, gbps=gbps,
                             pct_copy=100 * gbps / copy_gbps, max_err=err))
            print(json.dumps(rows[-1]), flush=True)
        torch._dynamo.reset()
    (out / f"exp-reload-softmax-{args.dtype}.json").write_text(json.dumps(dict(copy_gbps=copy_gbps, rows=rows),
                                                                         indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (max abs err)")
    for N in sorted({r["N"] for r in rows}):
        print(f"N={N}: " + "  ".join(f"{r['variant']} {r['pct_copy']:.1f} ({r['max_err']:.1e})"
                                     for r in rows if r["N"] == N))


if __name__ == "__main__":
    main()
