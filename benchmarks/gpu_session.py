"""One GPU session's measurements (rooftop.bench.session): ceilings, every registered family's sweep
with its providers side by side, decode-size launch costs, Nsight Compute readings.

Usage (on the GPU machine): PYTHONPATH=src python benchmarks/gpu_session.py OUT_DIR [--quick] [--families a,b]
[--no-ncu] [--all-cases]
[--ops a,b] [--providers p,q] [--widths n1,n2] [--leading m1,m2] [--set module.NAME=value ...]
--set changes a module constant of rooftop.ops first (a dispatch switch an experiment found better, measured here
before it is wired; the log says which). Prints a short table last; writes OUT_DIR/<device>-<date>-<family>.json (+ .csv).
`rooftop report` does the same on a GPU, then renders the report.
"""
from __future__ import annotations

import argparse
import ast
import importlib

import triton.language as tl

from rooftop.bench.session import run_session


def set_constant(assignment: str) -> None:
    """module.NAME=value: rooftop.ops.<module>.NAME = value (a Python literal)."""
    target, value = assignment.split("=", 1)
    module, name = target.rsplit(".", 1)
    mod = importlib.import_module(f"rooftop.ops.{module}")
    if not hasattr(mod, name):
        raise SystemExit(f"--set: rooftop.ops.{module} has no {name}")
    value = ast.literal_eval(value)
    # a global constexpr (read inside kernels) stays one
    setattr(mod, name, tl.constexpr(value) if isinstance(getattr(mod, name), tl.constexpr) else value)
    print(f"set rooftop.ops.{module}.{name} = {getattr(mod, name)!r}")

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and providers (under 5 minutes on an H200)")
    parser.add_argument("--families", help="comma-separated families to measure (default: all)")
    parser.add_argument("--no-ncu", action="store_true", help="no Nsight Compute readings")
    parser.add_argument("--all-cases", action="store_true", help="with --quick: every case, not the quick sizes")
    parser.add_argument("--ops", help="comma-separated ops of those families (default: all)")
    parser.add_argument("--providers", help="comma-separated providers instead of the preset's")
    parser.add_argument("--widths", help="comma-separated row widths N for the row sweeps (M * N = 2^27)")
    parser.add_argument("--leading", help="comma-separated first sizes: only the cases that start with one (batch M)")
    parser.add_argument("--set", action="append", default=[], help="module.NAME=value: a rooftop.ops constant")
    args = parser.parse_args()
    for assignment in args.set:
        set_constant(assignment)
    run_session(args.out, quick=args.quick, only=set(args.families.split(",")) if args.families else None,
                with_ncu=not args.no_ncu, all_cases=args.all_cases,
                ops=set(args.ops.split(",")) if args.ops else None,
                providers=args.providers.split(",") if args.providers else None,
                widths=tuple(map(int, args.widths.split(","))) if args.widths else None,
                leading=tuple(map(int, args.leading.split(","))) if args.leading else None)
