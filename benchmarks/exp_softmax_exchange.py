"""Experiment (session 46): softmax / log_softmax rows in parts with the parts' statistics swapped in one round trip
(softmax_sm90.swap_pairs, QUICK_EXCHANGE) against exchange_pairs, bf16, M * N = 2^27 (and 2^20-wide rows), on the H200.
Why: Nsight Compute of softmax in parts at 131072 (logs/h200-2026-12-04-s46/call-a): ~20% of the warp samples wait on
the exchange, where the polls find the other parts arrived at the first try: what the consumer waits for is
exchange_pairs' chain, a GPU-scope fence (the thread's outstanding stores of the last part), the arrival atomic and
its L1 invalidation, the poll and its invalidation, the pairs' loads, the leaving atomic (its count decides the
reset). swap_pairs: one relaxed 64-bit swap of the pair (the word is its own flag), one relaxed poll of the row's
words, the leaving count read a row later. Predicted: the parts within 2-3 points of whole rows (86-88%), and parts
of 16384 no longer far behind.
Variants: "library" (swap_pairs), "exchange" (QUICK_EXCHANGE off), "p16k" / "p16k_exchange" (parts of 16384). Each
checked against torch in float64 before and after its timing (a word left behind would make the next launch's
statistics stale); timed as exp_resident_params.py times. A deadlock would hang: run it under `timeout`.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_softmax_exchange.py OUT_DIR  (prints a table last)
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

SLOW = (softmax_sm90, dict(QUICK_EXCHANGE=False))
P16K = (sm, dict(PART_MAX_N=16384, EXP_PART_MAX_N=16384))
VARIANTS = {"library": [], "exchange": [SLOW], "p16k": [P16K], "p16k_exchange": [P16K, SLOW]}
CASES = [(op, N) for op in ("softmax", "log_softmax") for N in (131072, 262144, 1 << 20)]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for op, N in CASES:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        fn = getattr(rooftop, op)
        ref = getattr(torch, op)(x.double(), dim=-1)
        error = lambda x=x, ref=ref: float((fn(x).double() - ref).abs().max() / ref.abs().max())  # noqa: E731
        for name, switches in VARIANTS.items():
            with contextlib.ExitStack() as stack:
                for module, values in switches:
                    stack.enter_context(patched(module, **values))
                err = error()
                us = both(lambda x=x: fn(x))
                record_both(rows, copy_gbps, 2 * x.nbytes, us, op=op, N=N, provider=name, err=err, err_after=error())
        del x, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-softmax-exchange.json", copy_gbps, rows)
    print_both(rows, copy_gbps, CASES)


if __name__ == "__main__":
    main()
