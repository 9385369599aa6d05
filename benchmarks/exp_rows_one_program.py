"""Experiment (session 44): the row reductions on chip at 32768-65536 columns, bf16, M * N = 2^27, on the H200: one row
a 32-warp program, 32 registers, two programs an SM (89-90% of copy at 65536, NOTES item 266; ptxas issues 4 of a
thread's 8 loads before folding), against the same kernel launched one program an SM with maxnreg=64 ("r64"), the
shape of RMSNorm's one-program reload kernel (96.8% at 65536, pass 2 included).
Call a of session 44 also timed quantizing RMSNorm through the reload kernel (pass 1 reading w for max |r (offset +
w)|; commit 7974350 holds it): it spilled (offline, 112-288 bytes a thread at 65536) and ran 35-60% of copy
against the Gluon path's 66-90 (NOTES item 278); dropped.
Each is timed by do_bench (bench_ms, as the results files) and graph replay (_autotune.time_ms), with its error, as %
of a same-run bf16 copy of 2^27 elements timed the same way (torch.compile: the results files' rows).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_rows_one_program.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import rooftop
from exp_norm_reload import ELEMENTS, patched
from rooftop.bench.timing import bench_ms
from rooftop.ops import _autotune
from rooftop.ops import reductions as red

WIDTHS = (32768, 49152, 65536)
REDUCTIONS = {"row_sum": lambda t: t.float().sum(-1).to(t.dtype), "row_max": lambda t: t.amax(-1),
              "row_norm": lambda t: t.float().norm(dim=-1).to(t.dtype)}


def both(fn) -> list[float]:
    """[do_bench us, graph replay us] of fn."""
    return [bench_ms(fn) * 1e3, _autotune.time_ms(fn) * 1e3]


def one_program_launch(real):
    """`launch` with maxnreg=64 added to the on-chip reduction kernel's launches (one 32-warp program an SM)."""
    def launch(kernel, grid, *args, **options):
        if kernel is red._row_reduce_onchip_kernel:
            options["maxnreg"] = 64
        return real(kernel, grid, *args, **options)
    return launch


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    src = torch.empty(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_gbps = [2 * src.nbytes / us / 1e3 for us in both(lambda: dst.copy_(src))]
    rows = []

    def record(op, N, provider, nbytes, us, err):
        rows.append(dict(op=op, N=N, provider=provider, err=err, us=us,
                         pct=[100 * nbytes / t / 1e3 / g for t, g in zip(us, copy_gbps)]))
        print(json.dumps(rows[-1]), flush=True)

    for N in WIDTHS:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        for op, eager in REDUCTIONS.items():
            fn, ref = getattr(rooftop, op), eager(x).float()
            for name, launch in (("library", red.launch), ("r64", one_program_launch(red.launch))):
                with patched(red, launch=launch):
                    err = float((fn(x).float() - ref).abs().max() / ref.abs().max())
                    record(op, N, name, x.nbytes, both(lambda: fn(x)), err)
        (out / "exp-rows-one-program.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps[0]:.0f} (do_bench) / {copy_gbps[1]:.0f} (graph) GB/s; % of copy do_bench / graph, error")
    for op in REDUCTIONS:
        for N in WIDTHS:
            found = [r for r in rows if r["op"] == op and r["N"] == N]
            print(f"{op:17s} {N:6d} " + "  ".join(f"{r['provider']} {r['pct'][0]:5.1f}/{r['pct'][1]:5.1f} "
                                                   f"({r['err']:.1e})" for r in found))


if __name__ == "__main__":
    main()
