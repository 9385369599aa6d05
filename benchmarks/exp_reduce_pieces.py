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

WIDTHS = (65536, 131072)
KINDS = ("row_sum", "row_max", "row_norm")
# call e: pieces of 16384 (32 warps) 69-77%, of 32768 91.6-93.4 (row_max 77-79), the old kernels 89.6-93.0: a piece's
# end waits on its counter's round trip; more programs an SM (fewer warps a piece) should hide it
VARIANTS = {"old": [(rd, dict(PIECES_MIN_N=1 << 40))],
            "p16k_w8": [(rd, dict(PIECE_N=16384, PIECE_WARPS=8))],
            "p16k_w16": [(rd, dict(PIECE_N=16384, PIECE_WARPS=16))],
            "p32k_w8": [(rd, dict(PIECE_N=32768, PIECE_WARPS=8))],
            "p32k_w16": [(rd, dict(PIECE_N=32768, PIECE_WARPS=16))],
            "p32k_w32": [(rd, dict(PIECE_N=32768))],
            "p32k_w16_max1": [(rd, dict(PIECE_N=32768, PIECE_WARPS=16, PIECES_MAX_BY_COUNT=False))]}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-reduce-pieces.json", {(op, N): VARIANTS for op in KINDS for N in WIDTHS})
