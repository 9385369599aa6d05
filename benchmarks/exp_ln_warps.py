"""Experiment (session 45): LayerNorm's Gluon kernel (whole rows, 49152-65536) on consumer partitions of 8 warps
(norm_sm90.CONSUMER_WARPS) against the library's 4, bf16, M * N = 2^27, on the H200.
Why: quantizing RMSNorm's whole 65536 rows gained 7 points on 8-warp consumers (logs/h200-2026-12-04-s45/call-b);
LayerNorm's consumer issues as many instructions an element (15 a row) and runs 82.7% of copy at 65536 (the issue asks
90). Session 12's 8-warp LayerNorm spilled 104 bytes (item 96); the kernel of now compiles without spills at 8 warps
for whole 65536 rows (offline sm_90: 96 registers; 24 bytes in parts).
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_warps.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both, save_both
from exp_resident_params import calls
from rooftop.ops import norm_sm90

VARIANTS = {"library": {}, "w8": dict(CONSUMER_WARPS=8)}
CASES = [("layer_norm", N) for N in (49152, 57344, 65536)]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for op, N in CASES:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        call, reference, nbytes = calls(op, x, w, b, x)
        ref = reference()
        for name, switches in VARIANTS.items():
            with patched(norm_sm90, **switches):
                err = float((call().double() - ref).abs().max() / ref.abs().max())
                record_both(rows, copy_gbps, nbytes, both(call), op=op, N=N, provider=name, err=err)
        del x, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-ln-warps.json", copy_gbps, rows)
    print_both(rows, copy_gbps, CASES)


if __name__ == "__main__":
    main()
