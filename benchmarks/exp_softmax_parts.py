"""Experiment: softmax of rows past the Gluon ring split into parts (ops/softmax_sm90.py's exchange of (max, sum)
between the programs of a row's parts), by the widest part PART_MAX_N, against the whole-row paths they replace, on
the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed: _autotune.time_ms), % of a float32 device copy timed
the same way.

Variants: "library" (PART_MAX_N as set: 65536), "p32k" / "p16k" (parts of at most 32768 / 16384: more rows of parts
in a program's ring, more programs to wait for; P = 8 or 16 leaves 128 of 132 programs), "whole" (no parts: the
one-consumer kernel re-reading the row's head, or past GLUON_MAX_N the Triton kernels).
Usage: PYTHONPATH=src python benchmarks/exp_softmax_parts.py OUT_DIR   (prints a table last, writes
exp-softmax-parts.json)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import rooftop
from rooftop.ops import _autotune
from rooftop.ops import softmax as softmax_mod
from exp_norm_reload import copy_bandwidth, patched

WIDTHS = (131072, 262144, 1 << 20)
VARIANTS = (("library", {}), ("p32k", dict(PART_MAX_N=32768)), ("p16k", dict(PART_MAX_N=16384)),
            ("whole", dict(PART_MAX_N=1 << 40)))


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy = copy_bandwidth()
    rows = []
    for N in WIDTHS:
        x = torch.randn((1 << 27) // N, N, device="cuda", dtype=torch.bfloat16) * 4
        ref = torch.softmax(x.float(), -1)
        for name, values in VARIANTS:
            with patched(softmax_mod, **values):
                parts = softmax_mod.gluon_parts(x, torch.empty_like(x))
                err = float((rooftop.softmax(x).float() - ref).norm() / ref.norm())
                us = _autotune.time_ms(lambda: rooftop.softmax(x)) * 1e3
            pct = 100 * 2 * x.nbytes / (us * 1e-6) / 1e9 / copy
            rows.append(dict(N=N, variant=name, parts=parts, us=us, pct=pct, err=err))
            print(json.dumps(rows[-1]), flush=True)
    (out / "exp-softmax-parts.json").write_text(json.dumps(dict(copy_GBps=copy, rows=rows), indent=1))
    print(f"\ncopy {copy:.0f} GB/s; softmax bf16, % of copy (GPU time), parts in brackets")
    print(f"{'variant':10}" + "".join(f"{N:>16}" for N in WIDTHS))
    for name, _ in VARIANTS:
        cells = {r["N"]: f"{r['pct']:.1f}% ({r['parts']})" for r in rows if r["variant"] == name}
        print(f"{name:10}" + "".join(f"{cells.get(N, '-'):>16}" for N in WIDTHS))


if __name__ == "__main__":
    main()
