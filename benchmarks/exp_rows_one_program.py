"""Experiment (session 44): the row reductions on chip at 32768-65536 columns, bf16, M * N = 2^27, on the H200: one row
a 32-warp program, 32 registers, two programs an SM ("two_programs": 89-90% of copy at 65536, journal item 266; ptxas
issues 4 of a thread's 8 loads before folding), against the same kernel launched one program an SM with maxnreg=64,
the shape of RMSNorm's one-program reload kernel (96.8% at 65536, pass 2 included): calls a-b ("r64" then), +1-2 at
49152-65536 for row_sum / row_norm, level for row_max; the library's since (reductions.ONCHIP_ONE_PROGRAM_MIN_N).
Call a of session 44 also timed quantizing RMSNorm through the reload kernel (pass 1 reading w for max |r (offset +
w)|; commit 7974350 holds it): it spilled (offline, 112-288 bytes a thread at 65536) and ran 35-60% of copy
against the Gluon path's 66-90 (journal item 278); dropped.
Each is timed by do_bench (bench_ms, as the results files) and graph replay (_autotune.time_ms), with its error, as %
of a same-run bf16 copy of 2^27 elements timed the same way (torch.compile: the results files' rows).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_rows_one_program.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import rooftop
from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both, save_both
from rooftop.ops import reductions as red

WIDTHS = (32768, 49152, 65536)
REDUCTIONS = {"row_sum": lambda t: t.float().sum(-1).to(t.dtype), "row_max": lambda t: t.amax(-1),
              "row_norm": lambda t: t.float().norm(dim=-1).to(t.dtype)}


def two_programs_launch(real):
    """`launch` without the on-chip reduction kernel's maxnreg (two 32-warp programs an SM, as before session 44)."""
    def launch(kernel, grid, *args, **options):
        if kernel is red._row_reduce_onchip_kernel:
            options.pop("maxnreg", None)
        return real(kernel, grid, *args, **options)
    return launch


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for N in WIDTHS:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        for op, eager in REDUCTIONS.items():
            fn, ref = getattr(rooftop, op), eager(x).float()
            for name, launch in (("two_programs", two_programs_launch(red.launch)), ("library", red.launch)):
                with patched(red, launch=launch):
                    err = float((fn(x).float() - ref).abs().max() / ref.abs().max())
                    record_both(rows, copy_gbps, x.nbytes, both(lambda: fn(x)), op=op, N=N, provider=name, err=err)
        save_both(out / "exp-rows-one-program.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [(op, N) for op in REDUCTIONS for N in WIDTHS])

if __name__ == "__main__":
    main()
