"""Experiment (session 49): LayerNorm's Gluon rows without a residual two a consumer's turn (norm_sm90.PAIRED_ROWS,
_ln_pair_rows), on the H200, bf16, M * N = 2^27, % of a same-run copy.

Why (call c, exp_ln_params.py, % of a same-run copy by do_bench): the library's layer_norm with weight and bias /
weight alone / neither / rms_norm: 80.3 / 88.2 / 89.2 / 90.2 at 131072, 76.8 / 87.9 / 90.5 / 90.9 at 262144 (parts of
32768), 86.6 / 88.6 / 90.9 / 97.6 at 65536 (whole rows, 8-warp consumers). The bias alone costs 8-11 points in parts:
per element pass 2 reads 2 bytes of w and 2 of b from L2 beside x's 2 (its TMA ring), 6 bytes to the SM where the
weight alone (or RMSNorm) takes 4. Two rows a turn load each chunk's w and b once for both: 4 bytes.
Offline sm_90 (4-warp consumers at 240 registers): 138 local loads / stores (168 bytes of stack) in the pair path,
scalars of the loop (the single path none).
Predicted: parts at 131072 / 262144 from ~80 / 77 to >= 86 (the weight-alone figures less the spills); at 65536 in parts
(layer_norm.GLUON_MAX_N lowered: "p32k") paired >= the whole rows' 86.6.
Variants: "library", "paired", and at 65536 "p32k", "p32k_paired"; at 49152 (whole rows of 6 chunks on 8-warp
consumers) "paired".
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_pairs.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import layer_norm as ln, norm_sm90

PAIRED = [(norm_sm90, dict(PAIRED_ROWS=True))]
PARTS_OF_32K = [(ln, dict(GLUON_MAX_N=32768))]
CASES = {("layer_norm", 131072): {"library": [], "paired": PAIRED},
         ("layer_norm", 262144): {"library": [], "paired": PAIRED},
         ("layer_norm", 65536): {"library": [], "paired": PAIRED, "p32k": PARTS_OF_32K,
                                 "p32k_paired": PARTS_OF_32K + PAIRED},
         ("layer_norm", 49152): {"library": [], "paired": PAIRED}}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-ln-pairs.json", CASES)
