"""Experiment (session 45): softmax / log_softmax rows past the ring (131072, 262144: contiguous rows in parts,
softmax.PART_MAX_N) on the Gluon kernel's consumer partitions of 8 warps instead of 4 (softmax_sm90.CONSUMER_WARPS),
bf16, M * N = 2^27, on the H200.
Why: the issue asks 2x torch.compile at every N from 2048; at 131072 / 262144 the library runs 1.73x / 1.86x (77 /
75% of copy, parts of 65536 on two 4-warp consumers). Quantizing RMSNorm, whose pass 1 also carries more work an
element than a plain norm's, gained 7 points at 65536 from 8-warp consumers (logs/h200-2026-12-04-s45/call-b); a
softmax's passes (online max and sum of exp2, then exp2 and a multiply an element) are as heavy.
Variants: "library" (parts of 65536, 4 warps), "w8" (8 warps), "p32k" (parts of 32768, 4 warps), "p32k_w8".
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_softmax_part_warps.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

import rooftop
from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both, save_both
from rooftop.ops import softmax as sm
from rooftop.ops import softmax_sm90

W8 = (softmax_sm90, dict(CONSUMER_WARPS=8, _plans={}))  # the plans' keys hold no default warps: a fresh table
P32K = (sm, dict(PART_MAX_N=32768))
VARIANTS = {"library": [], "w8": [W8], "p32k": [P32K], "p32k_w8": [P32K, W8]}
CASES = [(op, N) for op in ("softmax", "log_softmax") for N in (131072, 262144)]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for op, N in CASES:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        fn = getattr(rooftop, op)
        ref = getattr(torch, op)(x.double(), dim=-1)
        for name, switches in VARIANTS.items():
            with contextlib.ExitStack() as stack:
                for module, values in switches:
                    stack.enter_context(patched(module, **values))
                err = float((fn(x).double() - ref).abs().max() / ref.abs().max())
                record_both(rows, copy_gbps, 2 * x.nbytes, both(lambda x=x: fn(x)), op=op, N=N, provider=name, err=err)
        del x, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-softmax-part-warps.json", copy_gbps, rows)
    print_both(rows, copy_gbps, CASES)


if __name__ == "__main__":
    main()
