"""`rooftop` command (also `python -m rooftop`): info, bench, roofline, profile, report, check."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

RESULTS = Path("benchmarks/results")


def _console():
    from rich.console import Console

    # piped output (logs, tests) gets wide lines rather than truncated table cells
    return Console() if sys.stdout.isatty() else Console(width=160)


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


def _table(title: str, headers, rows) -> None:
    from rich.table import Table

    table = Table(title=title)
    for h in headers:
        table.add_column(h, justify="right")
    for r in rows:
        table.add_row(*[str(x) for x in r])
    _console().print(table)


_NCU_FIGURES = (("kernel", "kernel", "{}"), ("duration_us", "duration (µs)", "{:.1f}"),
                ("dram_throughput_pct", "DRAM throughput (% of peak)", "{:.1f}"),
                ("dram_bytes_read", "DRAM read (MB)", "{:.1f}"), ("dram_bytes_write", "DRAM written (MB)", "{:.1f}"),
                ("sm_throughput_pct", "SM throughput (%)", "{:.1f}"),
                ("achieved_occupancy_pct", "achieved occupancy (%)", "{:.1f}"),
                ("theoretical_occupancy_pct", "theoretical occupancy (%)", "{:.1f}"),
                ("occupancy_limited_by", "occupancy limited by", "{}"),
                ("registers_per_thread", "registers / thread", "{:.0f}"),
                ("static_shared_mem_per_block", "static shared memory / block (B)", "{:.0f}"),
                ("dynamic_shared_mem_per_block", "dynamic shared memory / block (B)", "{:.0f}"),
                ("block_size", "threads / block", "{:.0f}"), ("grid_size", "grid (blocks)", "{:.0f}"),
                ("kernels", "kernels launched", "{:.0f}"))


def cmd_profile(args) -> int:
    if args.model is not None:
        return _profile_model(args)
    if not args.op:
        print("rooftop profile: name an op (rooftop profile softmax --shape 2048,65536) or use --model")
        return 2
    from rooftop import registry
    from rooftop.profile.op import profile

    spec = registry.get(args.op)
    shape = tuple(int(s) for s in args.shape.split(",")) if args.shape else spec.cases[len(spec.cases) // 2]
    result = profile(args.op, shape, args.dtype, args.provider, use_ncu=not args.no_ncu)
    console = _console()
    console.print(f"[bold]{args.op}[/] {'x'.join(map(str, shape))} {args.dtype}, provider {args.provider}: "
                  f"minimum {result.cost.bytes / 1e6:.1f} MB, {result.cost.flops / 1e9:.3f} GFLOP")
    if result.seconds is not None:
        console.print(f"time per call (do_bench median): {result.seconds * 1e6:.1f} µs")
    if result.ncu:
        rows = []
        for key, label, fmt in _NCU_FIGURES:
            value = result.ncu.get(key)
            if value is not None:
                rows.append((label, fmt.format(value / 1e6 if key.startswith("dram_bytes") else value)))
        _table("Nsight Compute (one cold call, --clock-control none)", ["figure", "value"], rows)
    if result.kernels:
        _table(f"compiled kernels ({result.kernels[0]['source']})",
               ["kernel", "grid", "warps", "regs", "spills", "smem (B)", "blocks/SM", "occupancy %", "limited by"],
               [(k["kernel"], "x".join(map(str, k["grid"])), k["num_warps"], k["n_regs"], k["n_spills"], k["shared"],
                 k["blocks_per_sm"], f"{k['theoretical_occupancy_pct']:.0f}", k["limited_by"]) for k in result.kernels])
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(result.roofline_text())
    for label, found in result.diagnoses:
        console.print(f"[bold]{label}:[/] {found.text}")
    return 0


def _profile_model(args) -> int:
    import torch

    from rooftop.profile.model import profile_model

    case, rows, total_us = profile_model(args.model or None, args.batch, args.seq, args.steps, top=args.top,
                                         patch=args.patch)
    where = "CUDA time of kernels" if torch.cuda.is_available() else "CPU time of ops (no GPU)"
    _table(f"{case.name}: top {len(rows)} by {where}, {total_us / 1e3:.1f} ms in all",
           ["kernel", "op", "shape", "calls", "time (ms)", "% of time", "% of roofline"],
           [(r.kernel if len(r.kernel) <= 60 else r.kernel[:57] + "...", r.op or "-",
             "x".join(map(str, r.shape)) if r.shape else "-", r.calls, f"{r.time_us / 1e3:.2f}",
             f"{100 * r.time_us / total_us:.1f}" if total_us else "-",
             "-" if r.roofline_pct is None else f"{r.roofline_pct:.1f}") for r in rows])
    print("op and % of roofline are shown where rooftop knows the op (its own annotated calls, aten ops in "
          "rooftop.profile.model.ATEN_OPS; a patched model's rooftop calls by name, with no roofline); '-' elsewhere.")
    return 0


def cmd_report(args) -> int:
    import torch

    from rooftop.report import build_report, check_render, find_chromium, render_png

    results = Path(args.results)
    measured = False
    if torch.cuda.is_available() and not args.render_only:
        from rooftop.bench.session import run_session

        run_session(results, quick=args.quick)
        measured = True
    elif not torch.cuda.is_available():
        print(f"no CUDA GPU here: rendering the committed results in {results}")
    path = build_report(results, args.out, measured=measured)
    print(f"report: {path} and {Path(args.out) / 'report.md'}")
    if args.png:
        if find_chromium() is None:
            print("--png: no Chromium found, no screenshot")
            return 0
        png = Path(args.out) / "report.png"
        problems = check_render(render_png(path, png), png)
        print(f"screenshot: {png}" + ("" if problems else " (charts decoded, not blank)"))
        for problem in problems:
            print(f"  problem: {problem}")
        return 1 if problems else 0
    return 0


def cmd_check(args) -> int:
    """Quick correctness of every registered op on the present device, against its reference."""
    import torch

    from rooftop import registry
    from rooftop.bench.sweep import parse_dtype, rel_err

    from rooftop.ops._support import interpreting

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        print("No CUDA GPU: " + ("the kernels run in Triton's interpreter, whose bf16 tl.dot and fp32 -> fp8 "
                                 "casts are wrong in Triton 3.6 (the tests patch them; this does not)"
                                 if interpreting() else
                                 "the ops run their PyTorch references (TRITON_INTERPRET=1 runs the kernels)"))
    failed = 0
    for spec in registry.all_ops():
        for shape in spec.check_cases:
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
    report_parsers = [p]

    p = sub.add_parser("profile", help="one op under Nsight Compute (or its compiled resources) with a diagnosis; "
                                       "or a model's top kernels (--model)")
    p.add_argument("op", nargs="?", help="registry name, e.g. softmax")
    p.add_argument("--shape", help="e.g. 4096,32768 (default: the op's middle benchmark case)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.add_argument("--provider", default="rooftop", help="rooftop, eager, compile or a peer (ncu only)")
    p.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute even when it is installed")
    p.add_argument("--model", nargs="?", const="", default=None,
                   help="profile a model's forward instead: 'llama' (transformers), 'tiny' (built-in), a "
                        "directory with config.json, or a .py file with build_model(device, dtype)")
    p.add_argument("--batch", type=int, help="--model: sequences per batch (default 8 on a GPU, 1 on a CPU)")
    p.add_argument("--seq", type=int, help="--model: tokens per sequence (default 512 on a GPU, 64 on a CPU)")
    p.add_argument("--steps", type=int, default=3, help="--model: forward passes profiled")
    p.add_argument("--top", type=int, default=15, help="--model: kernels listed")
    p.add_argument("--patch", action="store_true",
                   help="--model: swap in rooftop's fused ops first (rooftop.integrations.hf.patch_model)")
    p.set_defaults(fn=cmd_profile)

    p = sub.add_parser("report", help="measure (on a GPU), then the HTML + Markdown report from the results files")
    report_parsers.append(p)
    for p in report_parsers:
        p.add_argument("--results", default=str(RESULTS), help="results folder (read; written when measuring)")
        p.add_argument("--out", default="report", help="where index.html, report.md and the charts go")
        p.add_argument("--quick", action="store_true", help="measure the quick preset (under 5 minutes on an H200)")
        p.add_argument("--render-only", action="store_true", help="do not measure even on a GPU")
        p.add_argument("--png", action="store_true",
                       help="also screenshot the page in headless Chromium and check the charts show")
        p.set_defaults(fn=cmd_report)

    p = sub.add_parser("check", help="quick correctness of every op on this machine")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    p.set_defaults(fn=cmd_check)

    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
