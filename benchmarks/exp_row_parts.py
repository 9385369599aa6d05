"""Experiment: rows past the Gluon rings split into parts, each a program's, that merge their statistics across
programs (ops/softmax_sm90.py's exchange_pairs: softmax's (max, sum); norm_sm90's mean square or (mean, variance)),
against the paths they replace, on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed:
_autotune.time_ms), % of a float32 device copy timed the same way (the op's minimum bytes).

Variants per op: "library" (as it dispatches: parts of at most 65536), "p32k" (parts of at most 32768: more rows of
parts in a program's ring, more programs to wait for; 8 parts or more leave 128 of 132 programs), "whole" (no parts:
softmax's one-consumer kernel re-reading the row's head, or past GLUON_MAX_N the Triton kernels; the norms' split-words
kernels); with a residual, "parts" (norm_sm90.PARTS_RESIDUAL_MIN_N lowered to 65536: parts from 131072 on) against
the library (split-words kernels up to PARTS_RESIDUAL_MIN_N).
Runs on the H200 (logs/h200-2026-12-01-s12/; % of this harness's copy, 2703-2758 GB/s; at 131072 / 262144 / 1048576):
- 1, softmax only (exp-softmax-parts.log, then this file's predecessor): library 118.9 / 117.1 / 115.6 (2 / 4 / 16
  parts), p32k 118.4 / 117.4 / 116.0, parts of 16384 97.9 / 96.8 / 92.0, whole 116.5 / 103.8 / 87.6;
- 2, norms (exp-row-parts-norms.log, copy 2703): rms_norm library 130.5 / 130.6 / 127.3, p32k 122.2 / 117.3 / 109.3,
  whole 122.3 / 124.7 / 121.7; layer_norm 114.9 / 113.6 / 107.8, 111.6 / 108.5 / 101.2, 107.2 / 105.1 / 99.4;
  add_layer_norm split-words 130.3 / 130.0 / 102.9, parts 123.1 / 121.6 / 117.8;
- 3, residuals (exp-row-parts-residual.log, copy 2758, parts past 262144 in the library): add_rms_norm library 137.0 /
  136.1 / 129.4, parts 135.3 / 132.2 / 129.3; add_layer_norm 128.6 / 128.5 / 115.8, parts 121.0 / 120.3 / 115.7.
Usage: PYTHONPATH=src python benchmarks/exp_row_parts.py OUT_DIR [--ops softmax,rms_norm,...]   (prints a table
last, writes exp-row-parts.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import rooftop
from rooftop.ops import _autotune, norm_sm90
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn
from rooftop.ops import softmax as sm
from exp_norm_reload import calls, copy_bandwidth, patched

WIDTHS = (131072, 262144, 1 << 20)
OPS = ("softmax", "rms_norm", "layer_norm", "add_rms_norm", "add_layer_norm")


def variants(op: str):
    """(name, module, overrides) of the paths timed for `op`."""
    yield "library", sm, {}
    if op == "softmax":
        yield "p32k", sm, dict(PART_MAX_N=32768)
        yield "whole", sm, dict(PART_MAX_N=1 << 40)
        return
    module = rn if op.endswith("rms_norm") else ln
    if op.startswith("add"):
        yield "parts", norm_sm90, dict(PARTS_RESIDUAL_MIN_N=65536)
        return
    yield "p32k", module, dict(GLUON_MAX_N=32768)
    yield "whole", norm_sm90, dict(row_parts=lambda *args: 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ops", default=",".join(OPS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy = copy_bandwidth()
    rows = []
    for op in args.ops.split(","):
        for N in WIDTHS:
            shape = ((1 << 27) // N, N)
            x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
            res = torch.randn_like(x)
            w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            if op == "softmax":
                call, eager = (lambda: rooftop.softmax(x)), (lambda: torch.softmax(x.float(), -1))
            else:
                call, eager = calls(op, x, res, w, b)
            ref = eager()
            ref = ref[0] if isinstance(ref, tuple) else ref
            streams = 4 if op.startswith("add") else 2  # reads and writes of x's size
            for name, module, values in variants(op):
                with patched(module, **values):
                    y = call()
                    y = y[0] if isinstance(y, tuple) else y
                    err = float((y.float() - ref.float()).norm() / ref.float().norm())
                    us = _autotune.time_ms(call) * 1e3
                pct = 100 * streams * x.nbytes / (us * 1e-6) / 1e9 / copy
                rows.append(dict(op=op, N=N, variant=name, us=us, pct=pct, err=err))
                print(json.dumps(rows[-1]), flush=True)
    (out / "exp-row-parts.json").write_text(json.dumps(dict(copy_GBps=copy, rows=rows), indent=1))
    print(f"\ncopy {copy:.0f} GB/s; bf16, % of copy (GPU time); x {4220 / copy:.3f} for the session's 4220 GB/s")
    print(f"{'op':16}{'variant':10}" + "".join(f"{N:>10}" for N in WIDTHS))
    for op in args.ops.split(","):
        for name, _, _ in variants(op):
            cells = {r["N"]: f"{r['pct']:.1f}%" for r in rows if r["op"] == op and r["variant"] == name}
            print(f"{op:16}{name:10}" + "".join(f"{cells.get(N, '-'):>10}" for N in WIDTHS))


if __name__ == "__main__":
    main()
