"""Experiment: the reload kernels of rms_norm / layer_norm (session 10: journal items 69, 71) against the paths they
replace and torch.compile, on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed: _autotune.time_ms).

Per op and width, the library as it dispatches ("library"), the path it took before the reload kernels ("before":
the reload / Welford width range emptied, so Gluon or the on-chip kernel runs), for the residual forms the reload
kernels switched on for them too ("reload_res"), for rms_norm the whole row as one tile ("one_tile"), and
torch.compile of the eager reference (dynamo reset per width). % of a float32 device copy timed the same way.
Rows wider than the reload / Welford ranges also time those kernels stretched to them ("stretched": the range
widened, Gluon off): do they beat Gluon and the looped kernels? layer_norm also times the Welford kernel with tiles
of 16 or 8 values a thread over 32 warps ("welford_r16384_w32", "welford_r8192_w32") from 16384 up.
Usage: PYTHONPATH=src python benchmarks/exp_norm_reload.py OUT_DIR [--widths 12288,16384,32768] [--ops rms_norm,...]
(prints a table last, writes exp-norm-reload.json)
"""
from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import torch

import rooftop
from rooftop.ops import _autotune, _support
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn

WIDTHS = (12288, 16384, 32768)
ELEMENTS = 1 << 27


@contextlib.contextmanager
def patched(module, **values):
    """The module's switches set to `values` inside, with every recorded call forgotten on the way in and out (a
    replay would run the kernels of the switches it was recorded under: session 37's call a timed one variant)."""
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    _support.clear_plans()
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
        _support.clear_plans()


@contextlib.contextmanager
def switched(switches):
    """Every (module, values) of `switches` patched (`patched`) inside."""
    with contextlib.ExitStack() as stack:
        for module, values in switches:
            stack.enter_context(patched(module, **values))
        yield


def result_error(y, ref: torch.Tensor) -> float:
    """max |y - ref| / max |ref| of a call's result y (quantized, (q, scale): dequantized) against float64 ref."""
    y = y[0].double() * y[1].double() if isinstance(y, tuple) else y.double()
    return float((y - ref).abs().max() / ref.abs().max())


def time_variants(rows: list, copy_gbps: list[float], nbytes: int, call, ref: torch.Tensor, named: dict, **row) -> None:
    """Each of `named` (name: switches) with its switches on (`switched`): call's error against ref before and after
    its timing (`both`; a state left behind would show after), recorded (`record_both`) as provider name."""
    for name, switches in named.items():
        with switched(switches):
            err = result_error(call(), ref)
            us = both(call)
            record_both(rows, copy_gbps, nbytes, us, **row, provider=name, err=err, err_after=result_error(call(), ref))


def variants(op: str, N: int):
    """(name, module, overrides) of the library paths timed for `op` at width N."""
    wide = 1 << 20
    module = rn if op.endswith("rms_norm") else ln
    if module is ln:
        # the Welford kernel in tiles of 16 / 8 values a thread over 32 warps (its tiles' loads all issue before the
        # lanes' one merge: offline sm_90, 32 registers at 32768), the reload RMSNorm's shape (session 36: 98.7%)
        for rblock in (16384, 8192):
            if ln.WELFORD_MIN_N < N and rblock <= N:
                yield f"welford_r{rblock}_w32", ln, dict(WELFORD_MAX_N=wide, GLUON_ENABLED=False,
                                                         WELFORD_RESIDUAL=True, WELFORD_RBLOCK=rblock, WELFORD_WARPS=32)
    if op.startswith("add") and N == module.GLUON_MAX_N:  # the split-words kernel at Gluon's widest rows
        yield "library", module, {}
        yield "split_words", module, dict(GLUON_MAX_N=N // 2, SPLIT_MIN_N=N // 2)
        return
    if op.startswith("add") and N > module.SPLIT_MIN_N:  # the split-words kernels with a residual
        yield "library", module, {}
        yield "before", module, dict(SPLIT_WORDS_RESIDUAL=False)
        return
    if not op.startswith("add") and N > module.SPLIT_MIN_N:  # the split-words kernels' launch parameters
        yield "library", module, {}
        yield "looped", module, dict(SPLIT_MIN_N=wide)
        for chunk, warps, cap in ((8192, 8, None), (16384, 16, None), (16384, 8, None), (16384, 8, 56),
                                  (32768, 16, None)):
            launch = dict(CHUNK=chunk, num_warps=warps, **(dict(maxnreg=cap) if cap else {}))
            yield f"c{chunk}_w{warps}" + (f"_r{cap}" if cap else ""), module, dict(SPLIT_WORDS_LAUNCH=launch)
        return
    if op.endswith("rms_norm"):
        yield "library", rn, {}
        if N > rn.RELOAD_MAX_N:
            yield "stretched", rn, dict(RELOAD_MAX_N=wide, RELOAD_RESIDUAL_MAX_N=wide, GLUON_ENABLED=False)
            return
        yield "before", rn, dict(RELOAD_MAX_N=rn.RELOAD_MIN_N)
        if op.startswith("add"):
            yield "reload_res", rn, dict(RELOAD_RESIDUAL_MIN_N=rn.RELOAD_MIN_N)
        else:
            yield "one_tile", rn, dict(RELOAD_TILE_BYTES=1 << 20)
    else:
        yield "library", ln, {}
        if op.startswith("add") and N == ln.TRITON_RES_N:  # the width where Triton's kernel is taken over Gluon
            yield "gluon", ln, dict(TRITON_RES_N=0)
        if N > ln.WELFORD_MAX_N:
            if not op.startswith("add") and N <= ln.WELFORD_WIDE_MAX_N:  # the wide rows' Welford kernel off
                yield "gluon", ln, dict(WELFORD_WIDE_MAX_N=0)
            yield "stretched", ln, dict(WELFORD_MAX_N=wide, GLUON_ENABLED=False, WELFORD_RESIDUAL=True)
            return
        yield "before", ln, dict(WELFORD_MAX_N=ln.WELFORD_MIN_N)
        if N > ln.WELFORD_MIN_N:  # the Gluon kernel brought down to the Welford kernel's widths
            yield "gluon", ln, dict(WELFORD_MAX_N=ln.WELFORD_MIN_N, GLUON_MIN_N=ln.WELFORD_MIN_N)
        if op.startswith("add"):
            yield "reload_res", ln, dict(WELFORD_RESIDUAL=True)


def calls(op: str, x, res, w, b):
    """(rooftop call, eager reference) of `op`."""
    if op == "rms_norm":
        return lambda: rooftop.rms_norm(x, w), lambda: rn.rms_norm_eager(x, w)
    if op == "add_rms_norm":
        return lambda: rooftop.rms_norm(x, w, residual=res), lambda: rn.add_rms_norm_eager(x, res, w)
    if op == "layer_norm":
        return lambda: rooftop.layer_norm(x, w, b), lambda: ln.layer_norm_eager(x, w, b)
    return lambda: rooftop.layer_norm(x, w, b, residual=res), lambda: ln.add_layer_norm_eager(x, res, w, b)


def measured(op: str, N: int, name: str, run, ref, nbytes: int, copy_gbps: float) -> dict:
    """One variant's row (printed): its relative error against `ref` (y of the call's result) and GPU time."""
    got = run()
    got = got[0] if isinstance(got, tuple) else got
    err = float((got.double() - ref.double()).norm() / ref.double().norm())
    us = _autotune.time_ms(run) * 1e3
    row = dict(op=op, N=N, provider=name, us=us, pct=100 * nbytes / us / 1e3 / copy_gbps, err=err)
    print(json.dumps(row), flush=True)
    return row


def both(fn) -> list[float]:
    """[do_bench us (bench_ms, as the results files), graph replay us (_autotune.time_ms)] of fn."""
    from rooftop.bench.timing import bench_ms
    return [bench_ms(fn) * 1e3, _autotune.time_ms(fn) * 1e3]


def copy_both() -> list[float]:
    """GB/s of a device copy of ELEMENTS bf16 values (read + write), timed both ways (`both`)."""
    src = torch.empty(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return [2 * src.nbytes / us / 1e3 for us in both(lambda: dst.copy_(src))]


def record_both(rows: list, copy_gbps: list[float], nbytes: int, us: list[float], **row) -> None:
    """rows += row with its times `us` (`both`) and their % of the copy timed the same way; printed as JSON."""
    rows.append(dict(row, us=us, pct=[100 * nbytes / t / 1e3 / g for t, g in zip(us, copy_gbps)]))
    print(json.dumps(rows[-1]), flush=True)


def save_both(path, copy_gbps: list[float], rows: list) -> None:
    """`record_both`'s rows and the copy they are a % of, as JSON at `path` (after each case: a run cut short keeps
    what it measured)."""
    path.write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))


def print_both(rows: list, copy_gbps: list[float], cases) -> None:
    """The table of `record_both`'s rows: a line per (op, N) of `cases`, each provider's % of copy by do_bench /
    graph replay and its error."""
    print(f"\ncopy {copy_gbps[0]:.0f} (do_bench) / {copy_gbps[1]:.0f} (graph) GB/s; % of copy do_bench / graph, error")
    for op, N in cases:
        found = [r for r in rows if r["op"] == op and r["N"] == N]
        print(f"{op:17s} {N:6d} " + "  ".join(f"{r['provider']} {r['pct'][0]:5.1f}/{r['pct'][1]:5.1f} "
                                               f"({r['err']:.0e})" for r in found))


def copy_bandwidth() -> float:
    """GB/s of a device copy of M * N bf16 values (read + write), timed as the kernels are."""
    src = torch.empty(ELEMENTS, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / _autotune.time_ms(lambda: dst.copy_(src)) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    parser.add_argument("--ops", default="rms_norm,layer_norm,add_rms_norm,add_layer_norm")
    args = parser.parse_args()
    widths, ops = [int(n) for n in args.widths.split(",")], args.ops.split(",")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for op in ops:
        for N in widths:
            M = ELEMENTS // N
            x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
            res = torch.randn_like(x)
            w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            run, eager = calls(op, x, res, w, b)
            nbytes = (4 if op.startswith("add") else 2) * x.nbytes
            ref = eager()
            ref = ref[0] if isinstance(ref, tuple) else ref
            for name, module, overrides in variants(op, N):
                with patched(module, **overrides):
                    rows.append(measured(op, N, name, run, ref, nbytes, copy_gbps))
            torch._dynamo.reset()
            compiled = torch.compile(eager)
            compiled()
            us = _autotune.time_ms(compiled) * 1e3
            rows.append(dict(op=op, N=N, provider="compile", us=us, pct=100 * nbytes / us / 1e3 / copy_gbps))
            print(json.dumps(rows[-1]), flush=True)
            (out / "exp-norm-reload.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27")
    names = sorted({r["provider"] for r in rows if r["provider"] != "compile"} - {"library"}, key=str)
    names = ("library", *names, "compile")
    print(f"{'op':16s} {'N':>6s} " + " ".join(f"{n:>10s}" for n in names))
    for op in ops:
        for N in widths:
            found = {r["provider"]: r["pct"] for r in rows if r["op"] == op and r["N"] == N}
            print(f"{op:16s} {N:6d} " + " ".join(f"{found[n]:9.1f}%" if n in found else f"{'-':>10s}" for n in names))


if __name__ == "__main__":
    main()
