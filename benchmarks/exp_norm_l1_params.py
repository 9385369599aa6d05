"""Experiment: do the Gluon norms (ops/norm_sm90.py) at N = 32768-65536 wait on L2 for their weight and bias, and
would a smaller ring of x's chunks, leaving L1 room to keep the parameters from row to row, take that away?

Why: every row's pass 2 reads the whole weight (and bias) again with plain global loads. The ring takes 224 KB of
the SM's 256 KB of L1 + shared memory, so the parameters (64 KB a 16-bit vector at N = 32768) cannot stay in the
~28 KB of L1 left and come from L2 each row: at LayerNorm's 3.6 TB/s (84% of copy at 32768) that is 3.6 TB/s of
L2-to-SM reads for the parameters on top of x's 1.8 in and 1.8 out, ~7 TB/s in all, the H200's L2 bandwidth or
near it; without weight and bias LayerNorm ran 89% (session 20, item 148). TMA's ring loads do not pass through
L1 and stores do not allocate there, so with the ring cut to 6 chunks of 8192 (96 KB, the 100 KB carve-out leaves
~156 KB of L1) the parameters of a 32768-wide row (128 KB for LayerNorm, 64 KB for RMSNorm) would be L1 hits after
the first row. At 65536 a whole row needs 8 chunks of the ring, and the parameters 128 / 256 KB: rows in 2 parts of
32768 (each program always the same part: half the parameters) with the small ring.
Prediction: LayerNorm 84 -> ~89% of copy at 32768 (the bare kernel's), RMSNorm +1-2%; at 65536 the parts' exchange
costs what they gain.

Variants: "library" (14 buffers); "ring<B>" (B buffers of 8192); "ring<B>c" the same with the kernel's preferred
shared-memory carve-out set to what it uses (cuFuncSetAttribute, the driver's default may keep the largest);
"p32k<B>c" rows in parts of 32768 with B buffers and the carve-out set. GPU time (graph replay of 20 calls over the
L2-flushed inputs: _autotune.time_ms), % of a float32 device copy timed the same way.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_norm_l1_params.py OUT [--ops layer_norm,rms_norm]
[--widths 32768,65536]   (prints a table last, writes exp-norm-l1-params.json)
"""
from __future__ import annotations

import argparse
import ctypes
import json
from pathlib import Path

import torch

from rooftop.ops import _autotune, norm_sm90
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn
from exp_norm_reload import calls, copy_bandwidth, patched

CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
SMEM_PER_SM = 228 * 1024


def set_carveouts(buffers: int) -> None:
    """Every compiled norm kernel's preferred carve-out: the percentage of the SM's shared memory its ring needs."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    percent = min(100, -(-(buffers * 16384 + 2048) * 100 // SMEM_PER_SM))
    for plan in norm_sm90._plans.values():
        kernel = plan.launch.compiled.compiled
        kernel._init_handles()
        err = libcuda.cuFuncSetAttribute(ctypes.c_void_p(kernel.function),
                                         CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, ctypes.c_int(percent))
        assert err == 0, f"cuFuncSetAttribute: CUresult {err}"


def variants(N: int):
    """(name, module overrides, carve-out buffers or 0)."""
    yield "library", norm_sm90, {}, 0
    for buffers in ((6, 8) if N <= 32768 else (8, 10)):
        yield f"ring{buffers}", norm_sm90, dict(WIDE_BUFFERS=buffers), 0
        yield f"ring{buffers}c", norm_sm90, dict(WIDE_BUFFERS=buffers), buffers
    if N > 32768:
        for buffers in (6, 8):
            yield f"p32k{buffers}c", None, dict(WIDE_BUFFERS=buffers), buffers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ops", default="layer_norm,rms_norm")
    parser.add_argument("--widths", default="32768,65536")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy = copy_bandwidth()
    rows = []
    for op in args.ops.split(","):
        for N in map(int, args.widths.split(",")):
            M = (1 << 27) // N
            x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) * 4
            res = torch.randn_like(x)
            w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            call, eager = calls(op, x, res, w, b)
            ref = eager()
            streams = 4 if op.startswith("add") else 2
            for name, module, values, carve in variants(N):
                module_2 = rn if "rms_norm" in op else ln
                with patched(norm_sm90, **values), patched(module_2, **({"GLUON_MAX_N": 32768} if module is None
                                                                          else {})):
                    norm_sm90._plans.clear()
                    y = call()
                    y = y[0] if isinstance(y, tuple) else y
                    if carve:
                        set_carveouts(carve)
                    err = float((y.float() - ref.float()).norm() / ref.float().norm())
                    us = _autotune.time_ms(call) * 1e3
                pct = 100 * streams * x.nbytes / (us * 1e-6) / 1e9 / copy
                rows.append(dict(op=op, N=N, variant=name, us=us, pct=pct, err=err))
                print(json.dumps(rows[-1]), flush=True)
            norm_sm90._plans.clear()
    (out / "exp-norm-l1-params.json").write_text(json.dumps(dict(copy_GBps=copy, rows=rows), indent=1))
    print(f"\ncopy {copy:.0f} GB/s; bf16, % of copy (GPU time); x {4220 / copy:.3f} for the session's 4220 GB/s")
    names = list(dict.fromkeys(r["variant"] for r in rows))
    print(f"{'op':14}{'N':>7}" + "".join(f"{n:>10}" for n in names))
    for op in args.ops.split(","):
        for N in map(int, args.widths.split(",")):
            cells = {r["variant"]: f"{r['pct']:.1f}" for r in rows if r["op"] == op and r["N"] == N}
            print(f"{op:14}{N:>7}" + "".join(f"{cells.get(n, '-'):>10}" for n in names))


if __name__ == "__main__":
    main()
