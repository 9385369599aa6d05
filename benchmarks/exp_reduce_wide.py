"""Experiment (session 40): the row reductions' looped path at 131072-262144, where torch.compile ran 87-89% of copy
and ours 83-85% with 8 KB tiles over 8 warps, 88-89% with 16 KB over 16 (call b, journal item 262; now the library's).
Times each variant both ways: do_bench (bench_ms, as the results file) and graph replay (_autotune.time_ms); % of a
same-run bf16 copy timed the same way. Variants: tile bytes, warps, programs an SM; torch.compile of the eager
reference. Also argmax's split path at decode sizes (us), which the tile and warps change too.
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

VARIANTS = (("library", {}), ("tile8k_w8", dict(LOOPED_TILE_BYTES=8192, LOOPED_WARPS=8)),
            ("sm2", dict(PROGRAMS_PER_SM=2)), ("sm8", dict(PROGRAMS_PER_SM=8)),
            ("tile32k_w32_sm1", dict(LOOPED_TILE_BYTES=32768, LOOPED_WARPS=32, PROGRAMS_PER_SM=1)),
            ("tile32k_w32_sm2", dict(LOOPED_TILE_BYTES=32768, LOOPED_WARPS=32, PROGRAMS_PER_SM=2)))
# (op, shape): the looped path's wide rows, and argmax's split path at decode sizes (a vocabulary row or eight)
CASES = (("row_sum", (1024, 131072)), ("row_sum", (512, 262144)), ("row_max", (1024, 131072)),
         ("row_max", (512, 262144)), ("row_norm", (1024, 131072)), ("row_argmax", (1024, 131072)),
         ("row_argmax", (1, 128256)), ("row_argmax", (8, 128256)), ("row_sum", (4, 1 << 20)))
EAGER = {"row_sum": lambda t: t.float().sum(-1).to(t.dtype), "row_max": lambda t: t.amax(-1),
         "row_norm": lambda t: t.float().norm(dim=-1).to(t.dtype), "row_argmax": lambda t: t.argmax(-1)}


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
    for op, shape in CASES:
        fn, eager = getattr(rooftop, op), EAGER[op]
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        ref = eager(x).float()
        for name, overrides in VARIANTS + (("compile", None),):
            if overrides is None:
                torch._dynamo.reset()
                run = torch.compile(eager)
                run(x)
                err = 0.0
            else:
                with patched(red, **overrides):
                    err = float((fn(x).float() - ref).abs().max() / ref.abs().max())
                    us = both(lambda: fn(x))
            if overrides is None:
                us = both(lambda: run(x))
            rows.append(dict(op=op, shape=shape, provider=name, err=err, us=us,
                             pct=[100 * x.nbytes / t / 1e3 / g for t, g in zip(us, copy_gbps)]))
            print(json.dumps(rows[-1]), flush=True)
        (out / "exp-reduce-wide.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps[0]:.0f} (do_bench) / {copy_gbps[1]:.0f} (graph) GB/s; % of copy do_bench / graph "
          "(decode sizes: us by graph replay)")
    names = [v[0] for v in VARIANTS] + ["compile"]
    print(f"{'op':10s} {'shape':>13s} " + " ".join(f"{n:>15s}" for n in names))
    for op, shape in CASES:
        found = {r["provider"]: r for r in rows if r["op"] == op and r["shape"] == shape}
        decode = shape[0] < 64
        print(f"{op:10s} {'x'.join(map(str, shape)):>13s} " + " ".join(
            (f"{found[n]['us'][1]:11.2f} us" if decode else f"{found[n]['pct'][0]:7.1f}/{found[n]['pct'][1]:5.1f}")
            if n in found else f"{'-':>15s}" for n in names))

if __name__ == "__main__":
    main()
