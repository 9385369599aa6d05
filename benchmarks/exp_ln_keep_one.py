"""Experiment (session 49): LayerNorm's Gluon rows in parts with one of its parameters kept in shared memory
(norm_sm90.RESIDENT_ONE: the weight; the bias from L2), on the H200, bf16, M * N = 2^27, % of a same-run copy.

Why: in parts of 32768 the bias alone costs 8-11 points (exp_ln_params.py: weight and bias / weight alone 80.3 / 88.2
at 131072, 76.8 / 87.9 at 262144): pass 2 pulls 6 bytes an element from L2, which serves the SMs at ~5.6-6.5 TB/s
(exp_l2_read.py). Both kept leave x's ring 6 buffers for rows of 4 chunks (lost: 65.8% at 65536, journal item 281); one
kept leaves 10, as RMSNorm's parts run with their weight kept (90% of copy). Offline sm_90: no spills, 229.7 KB.
Predicted: >= 86 at 131072 and 262144 (the weight-alone figures less a shallower ring); at 65536 in parts of 32768
("p32k", layer_norm.GLUON_MAX_N lowered) against whole rows (the library, 86.6).
Call h (logs/h200-2026-12-04-s49/call-h), library / l2: 84.3 / 80.1 at 131072, 82.1 / 76.9 at 262144; at 65536 the
library (whole rows) 86.4, p32k 84.5, p32k_l2 80.6. Right past 65536; whole rows kept at 65536.
Variants: "library" (one kept), "l2" (RESIDENT_ONE off: both from L2, the library before), "p32k", "p32k_l2"; call j
"p16k": parts of 16384 (2 chunks), where both parameters fit beside a ring of 10, at 32768-262144 (the exchange a
part row costs twice as often: softmax's parts of 16384 lost 17 points, journal item 298). Call j: p16k 67.7 / 67.6 /
70.0 / 71.1 at 131072 / 262144 / 65536 / 32768 against the library's 84.1 / 81.9 / 85.3 / 92.6 (and l2 80.0 / 77.0
again): the exchange a part row, not the parameters, decides there. Call k (--whole): LayerNorm at 24576-40960 on
the Gluon kernel with the weight kept where it fits (32768: 4 chunks) against the library's Welford kernel, whose w and
b cost 6 points at 32768 (issue 3 asks 1.3x torch.compile there: ~93% of copy). Seen, library / gluon (weight kept at
32768) / gluon_l2: 92.1 / 87.1 / 88.5 at 24576, 92.0 / 87.3 / 87.1 at 32768, 93.8 / 86.3 / 86.7 at 40960: whole rows
on Gluon gain nothing from the kept weight (their limit is elsewhere, as item 252 found for the Welford kernel's
one-program variant); the Welford kernel keeps these widths.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_keep_one.py OUT_DIR [--whole]   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import layer_norm as ln, norm_sm90

L2 = [(norm_sm90, dict(RESIDENT_ONE=False))]
PARTS_OF_32K = [(ln, dict(GLUON_MAX_N=32768))]
# parts of 16384 (2 chunks): both parameters kept beside a ring of 10 (5 part rows), the Welford kernel's wide rows off
PARTS_OF_16K = [(ln, dict(GLUON_MAX_N=16384, PART_MAX_N=16384, WELFORD_WIDE_MAX_N=0))]
CASES = {("layer_norm", 131072): {"library": [], "l2": L2, "p16k": PARTS_OF_16K},
         ("layer_norm", 262144): {"library": [], "l2": L2, "p16k": PARTS_OF_16K},
         ("layer_norm", 65536): {"library": [], "p32k": PARTS_OF_32K, "p32k_l2": PARTS_OF_32K + L2,
                                 "p16k": PARTS_OF_16K},
         ("layer_norm", 32768): {"library": [], "p16k": PARTS_OF_16K}}
# call k: whole rows of 3-5 chunks on the Gluon kernel (the Welford kernel's wide rows off), the weight kept where it
# fits beside two rows (4 chunks: a ring of 10) or neither kept
GLUON_WHOLE = [(ln, dict(WELFORD_WIDE_MAX_N=0))]
WHOLE_CASES = {("layer_norm", N): {"library": [], "gluon": GLUON_WHOLE, "gluon_l2": GLUON_WHOLE + L2}
               for N in (24576, 32768, 40960)}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-ln-keep-one.json", WHOLE_CASES if "--whole" in sys.argv else CASES)
