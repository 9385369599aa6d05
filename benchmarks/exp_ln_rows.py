"""Experiment (session 49): LayerNorm's wide rows (16-bit, no residual) two rows a program in the Welford kernel
(layer_norm.WELFORD_WIDE_ROWS), on the H200, bf16, M * N = 2^27, % of a same-run copy.

Why: without weight and bias the Welford kernel ran 96-100% of copy at 32768-65536, with them 81-93 (session 39,
NOTES item 252): pass 2 re-reads w and b from L2 for every row (w and b past L1 from 24576, where a row's x, w and b
are more than the SM's L1). Per element L2 then serves x once from HBM and w and b: 6 bytes to the SM against the
copy's 2, which is about the L2's read rate at these speeds. Two rows a program load w and b once for both (4 bytes an
element), their x (2 x 64 KB at 32768) still in L1 for pass 2. Offline sm_90 (sm90_loads.py): two rows in 8192-wide
tiles over 32 warps 48 registers (one program an SM: the SM holds the same two rows as the one-row kernel's two
programs), in 4096-wide tiles 42; over 16 warps 50 (two programs, four rows an SM).
Predicted: >= 94% at 32768 (the library 90-92; issue 3 asks 1.3x torch.compile there, ~93.3%), a gain at 24576-40960,
none at 65536 (two rows of x no longer fit L1: re-read from L2, the same 6 bytes).
Variants: "library"; "r2_t8192_w32", "r2_t4096_w32", "r2_t4096_w16" (rows, tile, warps); "r2_t8192_w32_l1" (w and b
through L1); the widths past WELFORD_WIDE_MAX_N (Gluon in the library) reach the kernel by its bound raised.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_rows.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import layer_norm as ln

WIDTHS = (24576, 32768, 40960, 49152, 65536)


def variants(N: int) -> dict:
    wide = dict(WELFORD_WIDE_MAX_N=max(N, ln.WELFORD_WIDE_MAX_N))
    named = {"library": []}
    for rows, tile, warps in ((2, 8192, 32), (2, 4096, 32), (2, 4096, 16)):
        named[f"r{rows}_t{tile}_w{warps}"] = [(ln, dict(wide, WELFORD_WIDE_ROWS=rows, WELFORD_WIDE_RBLOCK=tile,
                                                        WELFORD_WIDE_WARPS=warps))]
    named["r2_t8192_w32_l1"] = [(ln, dict(wide, WELFORD_WIDE_ROWS=2, WELFORD_PARAMS_PAST_L1_MIN_N=1 << 30))]
    return named


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-ln-rows.json", {("layer_norm", N): variants(N) for N in WIDTHS})
