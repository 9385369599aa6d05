"""Experiment (session 46): softmax / log_softmax rows in parts (131072, 262144) whose consumers write a part after
folding the next one (softmax_sm90's DEFER), bf16, M * N = 2^27, on the H200.
Why: softmax in parts of 32768 on two 8-warp consumers runs 79 / 78% of copy at 131072 / 262144, where 2x torch.compile
needs 89 / 82%. Nsight Compute (logs/h200-2026-12-04-s46/call-a): the consumers stall on the partition barrier that
follows the exchange's poll (the other parts' programs not yet through pass 1): each part waits out the slowest of its
row's programs with its chunks idle in the ring. Deferred, a part's pass 2 comes a whole part's pass 1 later, by when
the other programs have long published. Predicted: the exchange's wait gone, the parts run as whole rows do (86-89%).
Variants (consumers, warps a consumer, part width, defer): the library as it dispatches, then softmax_sm90.softmax_rows
called with each; deferring needs each consumer's two parts in the ring (2 x consumers x chunks <= 13). Each checked
against torch in float64 first; timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run
copy). A deadlock would hang: run it under `timeout`.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_softmax_defer.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import rooftop
from exp_norm_reload import ELEMENTS, both, copy_both, print_both, record_both, save_both
from rooftop.ops import softmax_sm90
from rooftop.ops._support import num_sms

# name: (consumers, warps, part width, defer)
VARIANTS = {"c2w8_p32k": (2, 8, 32768, False), "defer_c1w8_p32k": (1, 8, 32768, True),
            "c2w8_p16k": (2, 8, 16384, False), "defer_c2w8_p16k": (2, 8, 16384, True),
            "defer_c2w4_p16k": (2, 4, 16384, True), "defer_c1w8_p16k": (1, 8, 16384, True)}
CASES = [(op, N) for op in ("softmax", "log_softmax") for N in (131072, 262144)]


def variant(x: torch.Tensor, y: torch.Tensor, log: bool, consumers: int, warps: int, part: int, defer: bool):
    """softmax_sm90.softmax_rows of x into y in parts `part` wide on that config, as a call returning y."""
    def call():
        softmax_sm90.softmax_rows(x, y, log, num_sms(0), consumers=consumers, warps=warps, parts=x.shape[1] // part,
                                  defer=defer)
        return y
    return call


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for op, N in CASES:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        ref = getattr(torch, op)(x.double(), dim=-1)
        calls = {"library": lambda x=x: getattr(rooftop, op)(x)}
        calls.update({name: variant(x, y, op == "log_softmax", *v) for name, v in VARIANTS.items()})
        for name, call in calls.items():
            y.zero_()
            err = float((call().double() - ref).abs().max() / ref.abs().max())
            torch.cuda.synchronize()
            record_both(rows, copy_gbps, 2 * x.nbytes, both(call), op=op, N=N, provider=name, err=err)
        del x, y, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-softmax-defer.json", copy_gbps, rows)
    print_both(rows, copy_gbps, CASES)


if __name__ == "__main__":
    main()
