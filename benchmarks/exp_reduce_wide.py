"""Experiment (session 40): the row reductions' looped path at 65536-262144, where torch.compile runs 87-89% of copy
and ours 83-85% (both by do_bench as the results file, and by graph replay: call a, NOTES item 261). Times each
variant both ways: do_bench (bench_ms) and graph replay (_autotune.time_ms); % of a same-run bf16 copy timed the same
way. Variants: tile bytes, warps, programs an SM; torch.compile of the eager reference (its kernel's source: run with
TORCH_LOGS=output_code).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_reduce_wide.py OUT_DIR
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

VARIANTS = (("library", {}), ("tile16k", dict(LOOPED_TILE_BYTES=16384)), ("tile32k", dict(LOOPED_TILE_BYTES=32768)),
            ("w4", dict(LOOPED_WARPS=4)), ("w16", dict(LOOPED_WARPS=16)),
            ("tile16k_w16", dict(LOOPED_TILE_BYTES=16384, LOOPED_WARPS=16)),
            ("tile16k_sm2", dict(LOOPED_TILE_BYTES=16384, PROGRAMS_PER_SM=2)),
            ("tile16k_sm8", dict(LOOPED_TILE_BYTES=16384, PROGRAMS_PER_SM=8)),
            ("tile32k_w16_sm2", dict(LOOPED_TILE_BYTES=32768, LOOPED_WARPS=16, PROGRAMS_PER_SM=2)))


def both(fn) -> tuple[float, float]:
    """(do_bench us, graph replay us) of fn."""
    return bench_ms(fn) * 1e3, _autotune.time_ms(fn) * 1e3


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    src = torch.empty(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy_us = both(lambda: dst.copy_(src))
    copy_gbps = [2 * src.nbytes / us / 1e3 for us in copy_us]
    rows = []
    for op in ("row_sum", "row_max"):
        fn = getattr(rooftop, op)
        eager = (lambda t: t.float().sum(-1).to(t.dtype)) if op == "row_sum" else (lambda t: t.amax(-1))
        for N in (65536, 131072, 262144):
            x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
            ref = eager(x).float()
            for name, overrides in VARIANTS:
                with patched(red, **overrides):
                    got = fn(x).float()
                    err = float((got - ref).abs().max() / ref.abs().max())
                    us = both(lambda: fn(x))
                rows.append(dict(op=op, N=N, provider=name, err=err, us=us,
                                 pct=[100 * x.nbytes / t / 1e3 / g for t, g in zip(us, copy_gbps)]))
                print(json.dumps(rows[-1]), flush=True)
            torch._dynamo.reset()
            compiled = torch.compile(eager)
            compiled(x)
            us = both(lambda: compiled(x))
            rows.append(dict(op=op, N=N, provider="compile", us=us,
                             pct=[100 * x.nbytes / t / 1e3 / g for t, g in zip(us, copy_gbps)]))
            print(json.dumps(rows[-1]), flush=True)
            (out / "exp-reduce-wide.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps[0]:.0f} (do_bench) / {copy_gbps[1]:.0f} (graph) GB/s; % of copy do_bench / graph")
    names = [v[0] for v in VARIANTS] + ["compile"]
    print(f"{'op':8s} {'N':>6s} " + " ".join(f"{n:>12s}" for n in names))
    for op in ("row_sum", "row_max"):
        for N in (65536, 131072, 262144):
            found = {r["provider"]: r["pct"] for r in rows if r["op"] == op and r["N"] == N}
            print(f"{op:8s} {N:6d} " + " ".join(f"{found[n][0]:5.1f}/{found[n][1]:5.1f}" if n in found else "-"
                                                 for n in names))


if __name__ == "__main__":
    main()
