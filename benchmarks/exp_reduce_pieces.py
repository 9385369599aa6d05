"""Experiment (session 48): the row reductions' wide rows in pieces of PIECE_N, a program each, in one launch
(reductions.py's "pieces" path: the row's last piece in combines the totals) against the kernels they replace (on chip
one program an SM to 65536, looped past it), on the H200, bf16, M * N = 2^27.

Predicted: pieces of 16384 run as the on-chip kernel's 16384-wide rows do (95-97% of a same-run copy, many programs
an SM overlapping loads and reductions), where one program an SM at 65536 and the looped kernel past it read 92-93 /
90-91 (call a of this session): ~95 at every width from 32768.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_reduce_pieces.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import reductions as rd

WIDTHS = (32768, 65536, 131072, 262144)
KINDS = ("row_sum", "row_max", "row_norm")
VARIANTS = {"library": [], "old": [(rd, dict(PIECES_MIN_N=1 << 40))], "p8192": [(rd, dict(PIECE_N=8192))],
            "p32768": [(rd, dict(PIECE_N=32768))]}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-reduce-pieces.json", {(op, N): VARIANTS for op in KINDS for N in WIDTHS})
