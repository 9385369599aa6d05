"""Experiment (sessions 45-46): LayerNorm's Gluon kernel on consumer partitions of 8 warps (norm_sm90.CONSUMER_WARPS)
against the library's 4, bf16, M * N = 2^27, on the H200: session 45 whole rows at 49152-65536 (now the library's);
session 46 ("--wide") rows in parts at 131072 / 262144 (parts of 65536, the library's then, or of 32768: "p32k",
the library's since session 47 (layer_norm.PART_MAX_N), so the variant now times parts of 65536: "p64k"; 76.7 /
74.8% of copy in the results where the issue asks 80), add_layer_norm at 65536 (88.7%; 16 bytes of spills at 8
warps), quantizing RMSNorm in parts of 32768 at 131072 / 262144 (75.9 / 75.3%; softmax's parts of 32768 gained
2.5 points on 8 warps, logs/h200-2026-12-04-s45/call-f).
Why: quantizing RMSNorm's whole 65536 rows gained 7 points on 8-warp consumers (logs/h200-2026-12-04-s45/call-b);
LayerNorm's consumer issues as many instructions an element (15 a row) and runs 82.7% of copy at 65536 (the issue asks
90). Session 12's 8-warp LayerNorm spilled 104 bytes (item 96); the kernel of now compiles without spills at 8 warps
for whole 65536 rows (offline sm_90: 96 registers; 24 bytes in parts).
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_warps.py OUT_DIR [--wide]  (prints a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import layer_norm as ln
from rooftop.ops import norm_sm90

W8, P64K = (norm_sm90, dict(CONSUMER_WARPS=8)), (ln, dict(PART_MAX_N=65536))
VARIANTS = {"library": [], "w8": [W8], "p64k": [P64K], "p64k_w8": [P64K, W8]}
# (op, N): the variants timed
CASES = {("layer_norm", N): ("library", "w8") for N in (49152, 57344, 65536)}
WIDE_CASES = {**{("layer_norm", N): tuple(VARIANTS) for N in (131072, 262144)},
              ("add_layer_norm", 65536): ("library", "w8"),
              **{("rms_norm_fp8", N): ("library", "w8") for N in (131072, 262144)}}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = WIDE_CASES if "--wide" in sys.argv else CASES
    time_cases(out / "exp-ln-warps.json", {case: {name: VARIANTS[name] for name in names}
                                           for case, names in cases.items()})


if __name__ == "__main__":
    main()
