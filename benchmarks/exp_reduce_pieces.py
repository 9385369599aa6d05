"""Experiment (session 48): the row reductions' wide rows in pieces, a program each, in one launch (reductions.py's
"pieces" path: the row's last piece in combines the totals) against the kernels they replace (on chip one program an
SM to 65536, looped past it), on the H200, bf16, M * N = 2^27, % of a same-run copy.

Predicted (call e): pieces of 16384 run as the on-chip kernel's 16384-wide rows do (95-97%, many programs an SM),
~95 at every width. Seen: over 32 warps (two programs an SM) 69-77% at 65536-262144, of 32768 over 32 warps
91.6-93.4 (row_max 77-79), the old kernels 89.6-93.0: every piece ends on its counter's round trip. Call f, warps a
piece: 16384 over 16 warps 91.7 / 91.4 (row_sum 65536 / 131072; old 90.7 / 88.6), row_norm 90.9 / 90.8 (90.7 /
88.6); row_max best at 32768 over 8 warps 90.0 / 90.1 (90.0 / 87.8). Kept past 65536 (reductions.PIECE_CONFIGS).
Variants: "library" (PIECE_CONFIGS), "old" (the kernels pieces replace).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_reduce_pieces.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import reductions as rd

WIDTHS = (65536, 131072, 262144)
KINDS = ("row_sum", "row_max", "row_norm")
VARIANTS = {"library": [], "old": [(rd, dict(PIECES_MIN_N=1 << 40))]}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-reduce-pieces.json", {(op, N): VARIANTS for op in KINDS for N in WIDTHS})
