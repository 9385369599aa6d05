"""Experiment (sessions 45-46): LayerNorm's Gluon kernel on consumer partitions of 8 warps (norm_sm90.CONSUMER_WARPS)
against the library's 4, bf16, M * N = 2^27, on the H200: session 45 whole rows at 49152-65536 (now the library's);
session 46 ("--wide") rows in parts at 131072 / 262144 (parts of 65536, the library's, or of 32768: "p32k"; 76.7 /
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

import torch

from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from exp_resident_params import calls
from rooftop.ops import layer_norm as ln
from rooftop.ops import norm_sm90

W8, P32K = (norm_sm90, dict(CONSUMER_WARPS=8)), (ln, dict(GLUON_MAX_N=32768))
VARIANTS = {"library": [], "w8": [W8], "p32k": [P32K], "p32k_w8": [P32K, W8]}
# (op, N): the variants timed
CASES = {("layer_norm", N): ("library", "w8") for N in (49152, 57344, 65536)}
WIDE_CASES = {**{("layer_norm", N): tuple(VARIANTS) for N in (131072, 262144)},
              ("add_layer_norm", 65536): ("library", "w8"),
              **{("rms_norm_fp8", N): ("library", "w8") for N in (131072, 262144)}}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    cases = WIDE_CASES if "--wide" in sys.argv else CASES
    for (op, N), names in cases.items():
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        call, reference, nbytes = calls(op, x, w, b, torch.randn_like(x))
        ref = reference()
        time_variants(rows, copy_gbps, nbytes, call, ref, {name: VARIANTS[name] for name in names}, op=op, N=N)
        del x, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-ln-warps.json", copy_gbps, rows)
    print_both(rows, copy_gbps, cases)


if __name__ == "__main__":
    main()
