"""`rooftop` command (also `python -m rooftop`): info, bench, roofline, profile, report, check."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RESULTS = Path("benchmarks/results")


def _console():
    from rich.console import Console

    return Console()


def _ceilings():
    """Measured ceilings of the present GPU (cached per device)."""
    from rooftop.hardware import measure_ceilings

    return measure_ceilings()


def cmd_info(args) -> int:
    from rich.table import Table

    from rooftop.hardware import ceilings_for, device_info, lookup_spec

    console = _console()
    info = device_info()
    for key, value in info.items():
        console.print(f"[bold]{key}[/]: {value}")
    name = info.get("name")
    if name is None:
        console.print("No CUDA device here: datasheet figures only.")
    spec = lookup_spec(name or args.device or "NVIDIA H200")
    measured = None
    if name is not None:
        measured = _ceilings() if args.measure else ceilings_for(name)
    table = Table(title=f"{spec.name if spec else name}: datasheet vs measured")
    table.add_column("figure")
    table.add_column("datasheet", justify="right")
    table.add_column("measured", justify="right")
    table.add_row("memory bandwidth (GB/s)", f"{spec.mem_GBps:.0f}" if spec else "-",
                  f"{measured.copy_GBps:.0f} ({measured.source})" if measured else "-")
    table.add_row("bf16 dense (TFLOP/s)", f"{spec.bf16_TFLOPs:.0f}" if spec else "-",
                  f"{measured.bf16_mm_TFLOPs:.0f} ({measured.source})" if measured else "-")
    if spec:
        table.add_row("fp8 dense (TFLOP/s)", f"{spec.fp8_TFLOPs:.0f}" if spec.fp8_TFLOPs else "-", "-")
        table.add_row("fp32 (TFLOP/s)", f"{spec.fp32_TFLOPs:.0f}", "-")
        table.add_row("SMs / L2 (MB)", f"{spec.sms} / {spec.l2_MB:.0f}", "-")
    console.print(table)
    return 0


def cmd_bench(args) -> int:
    import torch

    from rooftop import registry
    from rooftop.bench.plots import plot_curves
    from rooftop.bench.results import write_results
    from rooftop.bench.sweep import parse_dtype, run_sweep

    if not torch.cuda.is_available():
        print("rooftop bench needs a CUDA GPU; `rooftop report` renders the committed results without one.")
        return 2
    spec = registry.get(args.op)
    shapes = None
    if args.sizes:
        widths = [int(s) for s in args.sizes.split(",")]
        shapes = registry.row_sweep(widths=widths) if spec.x_key == "N" else None
    providers = args.providers.split(",") if args.providers else None
    ceilings = _ceilings()
    rows = run_sweep([args.op], parse_dtype(args.dtype), ceilings, shapes, providers)
    path = write_results(args.out, spec.family + ("" if args.op == spec.family else f"-{args.op}"), rows,
                         {"copy_GBps": ceilings.copy_GBps, "bf16_mm_TFLOPs": ceilings.bf16_mm_TFLOPs},
                         torch.cuda.get_device_name())
    plot_curves(rows, path.with_suffix(".png"), ceiling=ceilings.copy_GBps, ceiling_label="measured copy",
                title=f"{args.op} ({args.dtype})")
    _print_rows(rows)
    print(f"wrote {path} (+ .csv, .png)")
    return 0


def _print_rows(rows) -> None:
    from rich.table import Table

    table = Table()
    for col in ("op", "shape", "provider", "ms", "GB/s", "% roofline", "rel err"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["op"], "x".join(map(str, r["shape"])), r["provider"], f"{r['ms']:.4f}", f"{r['GBps']:.0f}",
                      f"{r['roofline_pct']:.1f}", "-" if r.get("rel_err") is None else f"{r['rel_err']:.1e}")
    _console().print(table)


def cmd_profile(args) -> int:
    from rooftop import registry
    from rooftop.hardware import ceilings_for
    from rooftop.profile.ncu import profile_op
    from rooftop.roofline import explain

    spec = registry.get(args.op)
    shape = tuple(int(s) for s in args.shape.split(","))
    reading = profile_op(args.op, shape, args.dtype, args.provider)
    print(json.dumps({k: v for k, v in reading.items() if k != "kernel"}, indent=1))
    from rooftop.bench.sweep import parse_dtype

    cost = spec.cost(shape, parse_dtype(args.dtype))
    print(explain(args.op, cost, reading["duration_us"] * 1e-6, ceilings_for(), ncu=reading))
    return 0


def cmd_report(args) -> int:
    from rooftop.report import build_report

    results = Path(args.results)
    path = build_report(results, args.out, measured=False)
    print(f"report: {path} (rendered from {results}; measure with benchmarks/gpu_session.py on a GPU)")
    return 0


def cmd_check(args) -> int:
    """Quick correctness of every registered op on the present device, against its reference."""
    import torch

    from rooftop import registry
    from rooftop.bench.sweep import parse_dtype, rel_err

    device = "cuda" if torch.cuda.is_available() else "cpu"
    failed = 0
    for spec in registry.all_ops():
        for shape in [(3, 1000), (2, 70000)]:
            inputs = spec.make_inputs(shape, parse_dtype(args.dtype), device)
            err = rel_err(spec.run(*inputs), spec.reference(*inputs))
            ok = err < {"bf16": 1.5e-2, "fp16": 2e-3, "fp32": 1e-5}[args.dtype]
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {spec.name:16s} {'x'.join(map(str, shape)):>10s} rel err {err:.1e}")
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="rooftop", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="device, datasheet and measured ceilings side by side")
    p.add_argument("--measure", action="store_true", help="measure the ceilings again (else the cached ones)")
    p.add_argument("--device", help="datasheet entry to show when there is no GPU (e.g. 'NVIDIA H100')")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("bench", help="time an op against every provider over its sizes")
    p.add_argument("op")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--sizes", help="comma-separated row widths N (M = 2^27 / N)")
    p.add_argument("--providers", help="comma-separated, e.g. rooftop,eager,compile,liger")
    p.add_argument("--out", default=str(RESULTS))
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("roofline", help="the report, whose roofline chart places every op (alias of report)")
    p.add_argument("--results", default=str(RESULTS))
    p.add_argument("--out", default="report")
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("profile", help="one op under Nsight Compute, with a diagnosis")
    p.add_argument("op")
    p.add_argument("--shape", required=True, help="e.g. 4096,32768")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--provider", default="rooftop")
    p.set_defaults(fn=cmd_profile)

    p = sub.add_parser("report", help="HTML + Markdown report from the results files")
    p.add_argument("--results", default=str(RESULTS))
    p.add_argument("--out", default="report")
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("check", help="quick correctness of every op on this machine")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.set_defaults(fn=cmd_check)

    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
