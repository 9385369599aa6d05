"""Experiment: the row reductions on wide rows among many (M * N = 2^27 bf16). Session 40: the looped path at
131072-262144 (8 KB tiles over 8 warps 83-85% of copy, 16 KB over 16 88-89%, now the library's). Session 41: the
chunks path (programs of a row's 32 KB chunk held in registers, the row's last one to finish combining the totals;
the on-chip kernel's 16384-wide rows run 95% of copy, its 65536-wide ones 89%) against the on-chip and looped paths
it replaces at 32768-262144, by chunk bytes and warps.
Times each variant both ways: do_bench (bench_ms, as the results file) and graph replay (_autotune.time_ms); % of a
same-run bf16 copy timed the same way; torch.compile of the eager reference beside them.
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

VARIANTS = (("no_chunks", dict(CHUNKS_MAX_N=0)), ("chunks32k_w32", {}),
            ("chunks16k_w16", dict(CHUNK_BYTES=16384, CHUNK_WARPS=16)),
            ("chunks16k_w8", dict(CHUNK_BYTES=16384, CHUNK_WARPS=8)),
            ("chunks32k_w16", dict(CHUNK_BYTES=32768, CHUNK_WARPS=16)),
            ("chunks64k_w32", dict(CHUNK_BYTES=65536, CHUNK_WARPS=32)))
CASES = tuple((op, ((1 << 27) // n, n)) for n in (32768, 65536, 131072, 262144)
              for op in ("row_sum", "row_max", "row_norm"))
EAGER = {"row_sum": lambda t: t.float().sum(-1).to(t.dtype), "row_max": lambda t: t.amax(-1),
         "row_norm": lambda t: t.float().norm(dim=-1).to(t.dtype)}


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
    print(f"\ncopy {copy_gbps[0]:.0f} (do_bench) / {copy_gbps[1]:.0f} (graph) GB/s; % of copy do_bench / graph")
    names = [v[0] for v in VARIANTS] + ["compile"]
    print(f"{'op':10s} {'shape':>13s} " + " ".join(f"{n:>15s}" for n in names))
    for op, shape in CASES:
        found = {r["provider"]: r for r in rows if r["op"] == op and r["shape"] == shape}
        print(f"{op:10s} {'x'.join(map(str, shape)):>13s} " + " ".join(
            f"{found[n]['pct'][0]:9.1f}/{found[n]['pct'][1]:5.1f}" if n in found else f"{'-':>15s}" for n in names))


if __name__ == "__main__":
    main()
