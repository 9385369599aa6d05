"""One GPU session's measurements, in one process: ceilings, every registered family's sweep with
its providers side by side, decode-size launch costs, Nsight Compute readings; one results file per
family in the DESIGN.md format. `rooftop report` runs it on a GPU before rendering;
benchmarks/gpu_session.py is the same as a script.

The quick preset (under 5 minutes on an H200): QUICK_CASES sizes a family (row ops: N = 1K, 8K,
64K, 256K), providers rooftop and eager (plus peers, which are cheap; no torch.compile, whose
per-shape compile dominates a sweep), one Nsight Compute reading per family within NCU_QUICK_BUDGET_S,
no decode sweep.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import torch
import triton

from rooftop import registry
from rooftop.bench import providers as prov
from rooftop.bench.results import write_results
from rooftop.bench.sweep import decode_latency, run_sweep, speedups
from rooftop.bench.timing import python_launch_us

QUICK_WIDTHS = (1024, 8192, 65536, 262144)
QUICK_CASES = 4  # sizes of a family that is not a row sweep: first, last and evenly between
NCU_QUICK_BUDGET_S = 90
# A family's file is written after each case with this note, and again whole at the family's end: a run cut by its
# time limit keeps the cases it measured.
PARTIAL_NOTE = "Partial: the run stopped before the family's end; these are the cases it had measured."
DECODE_OPS = ("add_rms_norm",)
DECODE_SHAPES = [(m, n) for m in (1, 8, 64) for n in (4096, 8192)]
# Readings worth having at full length (the looped paths and their L2 behaviour); every other family
# gets its rooftop op at its largest case.
NCU_CASES = [("softmax", (32768, 4096), "rooftop"), ("softmax", (2048, 65536), "rooftop"),
             ("softmax", (512, 262144), "rooftop"), ("softmax", (2048, 65536), "compile"),
             ("add_rms_norm", (16384, 8192), "rooftop"), ("add_rms_norm", (512, 262144), "rooftop")]


@triton.jit
def _empty_kernel(x_ptr, n):
    pass


def host_calibration() -> dict:
    """What a launch costs on this host, to read the decode figures against."""
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    return {"torch_add_python_us": python_launch_us(lambda: x + x),
            "empty_triton_kernel_python_us": python_launch_us(lambda: _empty_kernel[(1,)](x, 1))}


def families() -> dict[str, list[registry.OpSpec]]:
    """Every registered op, by family."""
    out: dict[str, list[registry.OpSpec]] = {}
    for spec in registry.all_ops():
        out.setdefault(spec.family, []).append(spec)
    return out


def quick_shapes(spec: registry.OpSpec) -> tuple[tuple[int, ...], ...]:
    """The quick preset's sizes of an op."""
    if tuple(spec.cases) == registry.row_sweep():
        return registry.row_sweep(widths=QUICK_WIDTHS)
    cases = list(spec.cases)
    if len(cases) <= QUICK_CASES:
        return tuple(cases)
    picks = sorted({round(i * (len(cases) - 1) / (QUICK_CASES - 1)) for i in range(QUICK_CASES)})
    return tuple(cases[i] for i in picks)


def _largest(spec: registry.OpSpec, shapes) -> tuple[int, ...]:
    return max(shapes, key=lambda s: (spec.cost(tuple(s), torch.bfloat16).bytes, tuple(s)[::-1]))


def ncu_plan(quick: bool) -> list[tuple[str, tuple, str]]:
    """(op, shape, provider) to read under Nsight Compute: one per family when quick."""
    plan = [] if quick else [c for c in NCU_CASES if c[0] in {s.name for s in registry.all_ops()}]
    covered = {registry.get(op).family for op, _, _ in plan}
    for family, specs in families().items():
        if family not in covered:
            spec = specs[0]
            plan.append((spec.name, _largest(spec, quick_shapes(spec) if quick else spec.cases), "rooftop"))
    return plan


def run_session(out: str | Path, quick: bool = False, say: Callable[[str], None] = print,
                only: set[str] | None = None, with_ncu: bool = True, all_cases: bool = False,
                ops: set[str] | None = None, providers: list[str] | None = None,
                widths: tuple[int, ...] | None = None, leading: tuple[int, ...] | None = None) -> list[Path]:
    """Measure every family (or those in `only`) on the present GPU; write
    out/<device>-<date>-<family>.json (+ .csv). `all_cases`: the quick preset's providers over every
    case of the op. `ops`: only these ops of the families; `providers`: these (where an op has them)
    instead of the preset's; `widths`: the row sweep at these N (M * N = 2^27) instead; `leading`: only the cases
    whose first size is one of these (the batch M of the GEMM-like ops)."""
    from rooftop.hardware import measure_ceilings
    from rooftop.profile.ncu import find_ncu, profile_op

    start = time.time()
    device = torch.cuda.get_device_name()
    ceilings = measure_ceilings(refresh=True)
    ceil = {"copy_GBps": ceilings.copy_GBps, "bf16_mm_TFLOPs": ceilings.bf16_mm_TFLOPs}
    say(f"{device}: copy {ceilings.copy_GBps:.0f} GB/s, bf16 mm {ceilings.bf16_mm_TFLOPs:.0f} TFLOP/s")

    ncu = []
    if not with_ncu:
        say("Nsight Compute readings not asked for")
    elif find_ncu():
        ncu_start = time.time()
        for op, shape, provider in ncu_plan(quick):
            if only and registry.get(op).family not in only:
                continue
            if quick and time.time() - ncu_start > NCU_QUICK_BUDGET_S:
                say(f"ncu: quick budget of {NCU_QUICK_BUDGET_S} s spent, {op} {list(shape)} left out")
                continue
            try:
                ncu.append(profile_op(op, shape, "bf16", provider))
            except Exception as e:  # one failed reading is reported, not fatal
                say(f"ncu {op} {list(shape)} {provider}: {e}")
    else:
        say("ncu not found: no Nsight Compute readings")

    decode = [] if quick else [d for op in DECODE_OPS if op in {s.name for s in registry.all_ops()}
                               and (not only or registry.get(op).family in only)
                               for d in decode_latency(op, DECODE_SHAPES, torch.bfloat16)]
    calibration = host_calibration()

    paths, all_rows = [], {}
    for family, specs in families().items():
        if only and family not in only:
            continue
        rows = []
        for spec in specs:
            if ops and spec.name not in ops:
                continue
            provider_names = [p for p in prov.available(spec) if p != "compile"] if quick else None
            if providers:
                provider_names = [p for p in providers if p in prov.available(spec)]
            shapes = quick_shapes(spec) if quick and not all_cases else None
            if widths and tuple(spec.cases) == registry.row_sweep():
                shapes = registry.row_sweep(widths=widths)
            if leading:
                shapes = tuple(c for c in (shapes or spec.cases) if c[0] in leading)
            done = list(rows)
            rows += run_sweep([spec.name], torch.bfloat16, ceilings, shapes, provider_names,
                              after_case=lambda more: write_results(out, family, done + more, ceil, device,
                                                                    notes=PARTIAL_NOTE))
        if not rows:
            say(f"{family}: no rows measured, no file written")
            continue
        names = {s.name for s in specs}
        extra = {"ncu": [n for n in ncu if n["op"] in names]}
        tables = {}
        for table in registry.family_tables(family):
            try:
                tables[table.title] = table.make(ceilings)
            except Exception as e:  # a table that cannot be made is reported, not fatal
                say(f"{family}: table {table.title!r} failed: {type(e).__name__}: {e}")
        if tables:
            extra["tables"] = tables
        if any(d["op"] in names for d in decode):
            extra["decode_us"] = [d for d in decode if d["op"] in names]
            extra["host_calibration_us"] = calibration
        if quick:
            extra["notes"] = ("Quick preset's providers (no torch.compile), every case." if all_cases else
                              "Quick preset: fewer sizes and providers (no torch.compile).")
        paths.append(write_results(out, family, rows, ceil, device, **extra))
        all_rows[family] = rows
        say(f"wrote {paths[-1]}")
    print_summary(device, ceilings, all_rows, decode, calibration, ncu, say)
    say(f"session took {time.time() - start:.0f} s")
    return paths


def print_summary(device, ceilings, all_rows, decode, calibration, ncu, say=print) -> None:
    """The short table: rooftop's GB/s or TFLOP/s, % of roofline and speed-ups, per family."""
    say(f"\n{device}, copy {ceilings.copy_GBps:.0f} GB/s; rooftop (% of roofline), speed-ups, other providers")
    for rows in all_rows.values():
        over = {p: speedups(rows, p) for p in ("compile", "eager")}
        for r in rows:
            if r["provider"] != "rooftop":
                continue
            key = (r["op"], tuple(r["shape"]))
            value = f"{r['TFLOPs']:6.1f} TFLOP/s" if r.get("TFLOPs") else f"{r['GBps']:5.0f} GB/s"
            peers = [o for o in rows if o["provider"] != "rooftop" and (o["op"], tuple(o["shape"])) == key]
            others = "  ".join(f"{o['provider']} {o['ms'] * 1e3:.0f}" + (f"/{o['graph_ms'] * 1e3:.1f}" if o.get("graph_ms")
                                                                       else "") + " us" for o in peers)
            ups = "  ".join(f"x{over[p][key]:.2f} {p}" for p in over if key in over[p])
            graph = ""
            if r.get("graph_ms"):  # GPU time alone: the ratio to each peer timed the same way
                ratios = "  ".join(f"x{o['graph_ms'] / r['graph_ms']:.2f} {o['provider']}" for o in peers if o.get("graph_ms"))
                graph = f"  [graph {r['graph_ms'] * 1e3:.1f} us ({r['graph_roofline_pct']:4.1f}%) {ratios}]"
            err = "" if r.get("rel_err") is None else f"  err {r['rel_err']:.1e}"
            say(f"{r['op']:14s} {'x'.join(map(str, r['shape'])):>16s}  {value} ({r['roofline_pct']:4.1f}%)  "
                f"{ups}{graph}  | {others}{err}")
    for d in decode:
        say(f"decode {d['op']} {d['provider']:8s} {d['shape']}: graph {d['graph_us']:.2f} us, "
            f"python {d['python_us']:.1f} us")
    say("host calibration: " + str({k: round(v, 1) for k, v in calibration.items()}))
    for n in ncu:
        say(f"ncu {n['op']} {n['shape']} {n['provider']}: dram {n.get('dram_throughput_pct', 0):.0f}% "
            f"bytes {n['dram_bytes'] / 1e6:.0f} MB, occupancy {n.get('achieved_occupancy_pct', 0):.0f}% "
            f"(limit {n.get('occupancy_limited_by', '?')}), regs {n.get('registers_per_thread', 0):.0f}, "
            f"{n.get('duration_us', 0):.0f} us")
