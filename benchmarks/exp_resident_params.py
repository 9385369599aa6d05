"""Experiment (session 44): the Gluon norm kernel with its weight and bias kept in shared memory
(norm_sm90.RESIDENT_PARAMS), against the library, on the H200, bf16, M * N = 2^27.

Why: the kernel reads the weight (and bias) from L2 once a row, twice when quantizing (pass 1's max |h (offset + w)|):
per row as many L2 -> SM bytes as the row's own, or more. Measured in session 39 (journal items 252-254): LayerNorm's
parameters cost it 7% at 32768 and 15% at 65536; and session 44's call a: quantizing RMSNorm without a residual runs
66-70% of copy at 49152-65536 (with one 88-90%). A program always takes the same part of a row, so its parameters
can be read once. Rows past 32768 need parts of 32768 for them to fit beside x's ring ("p32k": GLUON_MAX_N /
QUANT_PART_MAX_N 32768).
Each variant is timed by do_bench (bench_ms, as the results files) and graph replay (_autotune.time_ms), its error
against the eager reference beside, as % of a same-run bf16 copy of 2^27 elements timed the same way.
Call b (session 44) ran every case with the quantized ones timed wrongly (their dequantization inside the timing);
since then the quantized cases run by default, --all for every case.
Session 45: every variant twice, with the kernel as it is ("name") and as session 44 measured it ("name_membar":
Membar's partition barrier a chunk before each kept parameter read, journal item 286); "l2" the parameters re-read from
L2, "rows1" kept where x's ring still holds one row (RESIDENT_ROWS 1: LayerNorm in parts of 32768, 4 chunks of 8192,
w and b take 8 of 14 buffers; add_rms_norm_fp8 at 65536 the weight 8 of the 10 left beside the residual's ring).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_resident_params.py OUT_DIR [--all]  (prints a table last)
"""
from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both, save_both
from rooftop.ops import norm_sm90
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn

# op -> (widths, variants: name -> {module name: switches}); "sm90" is the norm_sm90 module timed (see main)
CASES = {
    "rms_norm_fp8": ((16384, 32768, 65536, 131072), {"library": {}, "l2": {"sm90": dict(RESIDENT_PARAMS=False)}}),
    "add_rms_norm_fp8": ((65536, 131072), {"library": {}, "rows1": {"sm90": dict(RESIDENT_ROWS=1)}}),
    "layer_norm": ((65536, 131072, 262144), {"library": {}, "p32k": {"ln": dict(GLUON_MAX_N=32768)},
                                            "p32k_rows1": {"ln": dict(GLUON_MAX_N=32768),
                                                           "sm90": dict(RESIDENT_ROWS=1)}}),
    "rms_norm": ((131072, 262144), {"library": {}, "p32k": {"rn": dict(GLUON_MAX_N=32768)},
                                    "p32k_rows1": {"rn": dict(GLUON_MAX_N=32768), "sm90": dict(RESIDENT_ROWS=1)}}),
}
# the lines item 286 added (barrier_not_needed before each kept read): membar_module builds the kernel without them
KEPT_READ_MARKS = ("barrier_not_needed(c, LEAN)  # each thread reads back", "barrier_not_needed(c, LEAN)  # (as pass 1",
                   "barrier_not_needed(c, LEAN)\n                    b = _read_chunk(b_ring")


def membar_module(folder: Path):
    """norm_sm90 as sessions 44 measured it (journal item 286): its source without the marks before the kept
    parameters' reads, so that Membar's partition barrier a chunk stays; imported from `folder`."""
    source = Path(norm_sm90.__file__).read_text()
    for mark in KEPT_READ_MARKS:
        if source.count(mark) != 1:
            raise RuntimeError(f"norm_sm90 changed: {mark!r} found {source.count(mark)} times")
        at = source.index(mark)
        line_start = source.rindex("\n", 0, at) + 1
        source = source[:line_start] + source[source.index("\n", at) + 1:]  # drops the mark's whole line
    path = folder / "norm_sm90_membar.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rooftop.ops.norm_sm90_membar", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def calls(op: str, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, res: torch.Tensor):
    """(the library call, its float64 reference of y (dequantized when quantizing), bytes moved at the least)."""
    nb = x.nbytes
    if op == "layer_norm":
        return (lambda: rooftop.layer_norm(x, w, b, 1e-5),
                lambda: F.layer_norm(x.double(), (x.shape[1],), w.double(), b.double(), 1e-5), 2 * nb)
    if op == "add_layer_norm":  # y (r beside it)
        h = x.double() + res.double()
        return (lambda: rooftop.layer_norm(x, w, b, 1e-5, residual=res)[0],
                lambda: F.layer_norm(h, (x.shape[1],), w.double(), b.double(), 1e-5), 4 * nb)
    if op == "rms_norm":
        return lambda: rooftop.rms_norm(x, w, 1e-6), lambda: _rms(x.double(), w), 2 * nb
    residual = res if op.startswith("add") else None
    h = x if residual is None else (x.float() + residual.float()).to(x.dtype)
    if op == "add_rms_norm":  # y (r beside it)
        return lambda: rooftop.rms_norm(x, w, 1e-6, residual=res)[0], lambda: _rms(h.double(), w), 4 * nb
    return (lambda: rooftop.rms_norm(x, w, 1e-6, residual=residual, quant="fp8"), lambda: _rms(h.double(), w),
            (nb if residual is None else 3 * nb) + nb // 2 + 4 * x.shape[0])


def _rms(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = CASES if "--all" in sys.argv else {op: CASES[op] for op in ("rms_norm_fp8", "add_rms_norm_fp8")}
    kernels = {"": norm_sm90, "_membar": membar_module(out)}
    copy_gbps = copy_both()
    rows = []
    for op, (widths, variants) in cases.items():
        for N in widths:
            x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
            res = torch.randn_like(x)
            w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            call, reference, nbytes = calls(op, x, w, b, res)
            ref = reference()
            for name, switches in variants.items():
                for suffix, sm90 in kernels.items():
                    modules = dict(rn=rn, ln=ln, sm90=sm90)
                    with contextlib.ExitStack() as stack:
                        stack.enter_context(patched(rn, norm_sm90=sm90))
                        stack.enter_context(patched(ln, norm_sm90=sm90))
                        for module, values in switches.items():
                            stack.enter_context(patched(modules[module], **values))
                        y = call()
                        if isinstance(y, tuple):  # quantized: (q, scale[, h]), dequantized to compare
                            y = y[0].double() * y[1].double()
                        err = float((y.double() - ref).abs().max() / ref.abs().max())
                        record_both(rows, copy_gbps, nbytes, both(call), op=op, N=N, provider=name + suffix, err=err)
            del x, res
            torch.cuda.empty_cache()
        save_both(out / "exp-resident-params.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [(op, N) for op, (widths, _) in cases.items() for N in widths])

if __name__ == "__main__":
    main()
