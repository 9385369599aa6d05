"""Experiment (session 49): rms_norm_fp8 without a residual (a model's first norm) on the on-chip kernel with other
launch shapes, on the H200, bf16, M * N = 2^27, % of a same-run copy.

The results file had it at 83.5-86.5% of copy at 8192-65536 (Gluon past QUANT_GLUON_MIN_N = 4096) and 87.2 at 1024
(issue 3 asks 90): the on-chip kernel ran 84.9 against Gluon's 88.2 at 8192 with 16 values a thread (session 44);
8 a thread lost (64-74). Untested then: 32 or 64 values a thread (fewer, wider programs; offline sm_90 at 8192, 32 a
thread: 8 warps, 57 registers, no spills) and more rows a program at 1024.
Predicted: 32 a thread >= 90 at 8192-16384 (the kernel's loads of a row all in flight at once, twice the programs
an SM of 16 a thread). Call a (logs/h200-2026-12-04-s49/call-a), library (16 a thread, Gluon past 4096) / 16 / 32 /
64 a thread on chip: 89.7 / 90.1 / 98.4 / 98.1 at 1024; 89.3 / 85.5 / 90.7 / 90.4 at 8192; 90.7 / 77.8 / 83.4 / 83.1
at 16384; 89.0 / 63 / 63 / 70 at 32768. 4096 or 8192 elements a program at 1024 lost (86.5, 80.5). Wired: 32 a
thread (rms_norm.QUANT_ONCHIP_ELEMS_PER_THREAD). Call b (the library now 32 a thread, Gluon past 4096), library / 16 /
32 / 64: 98.2 / 92.4 / 98.0 / 98.2 at 512, 98.5 / 89.7 / 98.1 / 97.8 at 1024, 97.7 / 94.6 / 97.9 / 98.3 at 2048, 98.0 /
91.7 / 97.5 / 92.7 at 4096, 89.2 (Gluon) / 84.6 / 89.7 / 89.4 at 8192, 89.3 (Gluon) / 63.9 / 72.2 / 71.4 at 12288:
32 a thread kept; Gluon keeps 8192 (on chip +0.5-1.4 there in both calls: within the spread).
Variants: "library"; "e{E}" the on-chip kernel at E values a thread (Gluon off for quantizing rows: QUANT_GLUON_MIN_N
raised).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_quant_onchip.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import rms_norm as rn

ONCHIP = dict(QUANT_GLUON_MIN_N=(1 << 30, rn.QUANT_GLUON_MIN_N[1]))
WIDTHS = (512, 1024, 2048, 4096, 8192, 12288)


def variants(N: int) -> dict:
    return {"library": [], **{f"e{elems}": [(rn, dict(ONCHIP, QUANT_ONCHIP_ELEMS_PER_THREAD=elems))]
                              for elems in (16, 32, 64)}}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-quant-onchip-b.json", {("rms_norm_fp8", N): variants(N) for N in WIDTHS})
