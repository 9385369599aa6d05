"""Experiment (session 40): LayerNorm's columns kernel (layer_norm._layer_norm_columns_kernel) against the library as it
dispatches, on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed: _autotune.time_ms), % of a same-run
copy. Persistent programs each own a column part of every row of their group: w and b load once a program and stay
in registers, so the per-row parameter traffic that holds the reload kernels back at 32-64K (NOTES items 252-254:
7-15%) is gone; each row costs an exchange of (mean, M2) between its parts, hidden by the next row's loads.
Variants: PART / warps / programs an SM. RMSNorm's columns kernel too (rms_norm._rms_norm_columns_kernel; ops
rms_norm, add_rms_norm, add_rms_norm_fp8: the row's scale from the parts' max |r w|, exchanged with the sums).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_columns.py OUT_DIR [--widths ..] [--ops ..]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from exp_norm_reload import ELEMENTS, calls, copy_bandwidth, measured, patched
import rooftop
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn

CONFIGS = ((4096, 16, 2), (2048, 8, 4), (2048, 8, 3), (8192, 32, 1), (8192, 16, 1), (4096, 8, 2))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default="32768,49152,65536,131072,262144")
    parser.add_argument("--ops", default="layer_norm,add_layer_norm")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for op in args.ops.split(","):
        for N in map(int, args.widths.split(",")):
            M = ELEMENTS // N
            x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
            res = torch.randn_like(x)
            w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            if op == "add_rms_norm_fp8":  # y at 1 byte a value
                run, eager = (lambda: rooftop.rms_norm(x, w, residual=res, quant="fp8"),
                              lambda: rn.add_rms_norm_fp8_eager(x, res, w))
                nbytes = 3.5 * x.nbytes
            else:
                run, eager = calls(op, x, res, w, b)
                nbytes = (4 if op.startswith("add") else 2) * x.nbytes
            module = rn if "rms" in op else ln
            ref = eager()
            ref = ref[0] if isinstance(ref, tuple) else ref
            rows.append(measured(op, N, "library", run, ref, nbytes, copy_gbps))
            for part, warps, per_sm in CONFIGS:
                with patched(module, COLUMNS_MIN_N=0, COLUMNS_MAX_N=1 << 30, COLUMNS_PART=part, COLUMNS_WARPS=warps,
                             COLUMNS_PROGRAMS_PER_SM=per_sm):
                    rows.append(measured(op, N, f"p{part}_w{warps}_s{per_sm}", run, ref, nbytes, copy_gbps))
            (out / "exp-ln-columns.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27")
    names = ["library"] + [f"p{p}_w{w}_s{s}" for p, w, s in CONFIGS]
    print(f"{'op':15s} {'N':>6s} " + " ".join(f"{n:>11s}" for n in names))
    for op in args.ops.split(","):
        for N in map(int, args.widths.split(",")):
            found = {r["provider"]: r for r in rows if r["op"] == op and r["N"] == N}
            print(f"{op:15s} {N:6d} " + " ".join(
                f"{found[n]['pct']:10.1f}%" if n in found and found[n]["err"] < 3e-2
                else f"{'bad' if n in found else '-':>11s}"
                for n in names))


if __name__ == "__main__":
    main()
