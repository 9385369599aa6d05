"""Experiment: rows past the Gluon rings split into parts, each a program's, that merge their statistics across
programs (ops/softmax_sm90.py's exchange_pairs: softmax's (max, sum); norm_sm90's mean square or (mean, variance)),
against the paths they replace, on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed:
_autotune.time_ms), % of a float32 device copy timed the same way (the op's minimum bytes).

Variants per op: "library" (as it dispatches: parts of at most 65536), "p32k" (parts of at most 32768: more rows of
parts in a program's ring, more programs to wait for; 8 parts or more leave 128 of 132 programs), "whole" (no parts:
softmax's one-consumer kernel re-reading the row's head, or past GLUON_MAX_N the Triton kernels; the norms' split-words
kernels); with a residual, "parts" (norm_sm90.PARTS_RESIDUAL_MIN_N lowered to 65536: parts from 131072 on) against
the library (split-words kernels up to PARTS_RESIDUAL_MIN_N).
Runs on the H200 (logs/h200-2026-12-01-s12/; % of this harness's copy, 2703-2758 GB/s; at 131072 / 262144 / 1048576):
- 1, softmax only (exp-softmax-parts.log, then this file's predecessor): library 118.9 / 117.1 / 115.6 (2 / 4 / 16
  parts), p32k 118.4 / 117.4 / 116.0, parts of 16384 97.9 / 96.8 / 92.0, whole 116.5 / 103.8 / 87.6;
- 2, norms (exp-row-parts-norms.log, copy 2703): rms_norm library 130.5 / 130.6 / 127.3, p32k 122.2 / 117.3 / 109.3,
  whole 122.3 / 124.7 / 121.7; layer_norm 114.9 / 113.6 / 107.8, 111.6 / 108.5 / 101.2, 107.2 / 105.1 / 99.4;
  add_layer_norm split-words 130.3 / 130.0 / 102.9, parts 123.1 / 121.6 / 117.8;
- 3, residuals (exp-row-parts-residual.log, copy 2758, parts past 262144 in the library): add_rms_norm library 137.0 /
  136.1 / 129.4, parts 135.3 / 132.2 / 129.3; add_layer_norm 128.6 / 128.5 / 115.8, parts 121.0 / 120.3 / 115.7.
Session 13 adds the quantizing add_rms_norm_fp8 (on the Gluon path since this session: 76-78% of copy from 65536 by
do_bench, against 88.5% at 32768; a 64K row takes 8 of the 10 buffers of x's ring, so the next row's loads wait on
this one's pass 2, and pass 1 now costs 13 instructions an element) and two consumer shapes: "w8", 8-warp consumers
(2 x 8 warps: more warps to hide the latency that Nsight Compute finds holding the Gluon kernels, 72% of the issue
slots idle at N = 65536, a third of the stalls at the releases' barriers), and "w8c4k", the same with 4096-element
chunks (8 warps with 8192 spill for layer_norm and the quantizing rms_norm, offline sm_90). Then (run 2, after
Nsight Compute's stall reasons at 65536: rms_norm 3.7 cycles an instruction at barriers, 3.7 on long scoreboards)
"a2", the norms' weight and bias loads two chunks ahead (add_layer_norm spilled 32 bytes), and "s14", softmax's ring
of 14 buffers (224 KB) instead of 13: one more chunk of slack. Neither kept (the code is in git history, session 13).
Runs on the H200 (logs/h200-2026-12-01-s13/, % of copy x 2755 / 4220 at 32768 / 65536 / 131072, GPU time):
- 1 (exp-row-parts.log): add_rms_norm_fp8 library (whole rows to 65536) 89.1 / 78.0 / 76.1, p32k 89.3 / 83.5 / 84.2,
  w8 86.8 / 85.1 / 77.9, w8c4k 82.4 / 75.5 / 72.5; rms_norm library 91.0 / 87.1 / 83.9, w8 91.1 / 86.8 / 83.2, w8c4k
  and p32k lower at 65536 on; layer_norm library 83.6 / 81.0 / 74.6, w8 62.1 / 60.6 / 59.9 (spills), w8c4k 74.8 /
  70.9 / 70.2, p32k 83.8 / 72.0 / 71.1; add_layer_norm library 90.9 / 86.1 / 84.5, w8c4k 90.9 / 87.7 / 84.5; softmax
  library 87.2 / 86.8 / 77.1, w8 88.1 / 86.2 / 78.2, p32k 87.6 / 86.7 / 76.4.
- 2 (exp-row-parts-run2.log; quantizing rows in parts of 32768 now the library's): a2 against the library, rms_norm
  91.3 / 86.7 / 83.8 vs 91.1 / 87.3 / 84.8, add_rms_norm 96.6 / 90.0 / 90.2 vs 96.7 / 90.0 / 90.0, add_rms_norm_fp8
  88.0 / 83.4 / 83.5 vs 89.3 / 84.1 / 85.0, layer_norm 77.9 / 74.2 / 71.9 vs 84.0 / 80.8 / 75.0; softmax s14 87.5 /
  86.9 / 77.6 vs 87.8 / 87.0 / 77.2.
Session 17 adds "full": the ring kernels with every barrier Triton 3.6's Membar puts in their loops (before each
mbarrier wait, before a buffer's read after an arrive), which the library now drops where the ring's protocol does
not need them (softmax_sm90.barrier_not_needed): 1-3 partition barriers a chunk fewer. Predicted from Nsight Compute's
barrier stalls (a third of the stalls at 65536, item 95): a few % at 32768-262144, most where a chunk's work is
shortest (rms_norm, softmax).
Session 18 adds --tail: each width at M = 2^27 / N rows and at the multiples of the SM count around it (132 x 15 =
1980, 2048, 132 x 16 = 2112 at 65536), to see what the last, partly filled round of rows costs: 2048 rows of 65536
are 16 rows for 68 programs and 15 for 64 (a row-granular kernel's time ~16 rows, 3% over the 15.5 of the mean),
4096 of 32768 32 rows for 4 programs and 31 for 128. "%" is by each launch's own bytes.
Session 20 adds the ops "<norm>_bare" (layer_norm_bare, rms_norm_bare, ..): the same rows without a weight and bias,
to see what their loads cost (Nsight Compute, logs/h200-2026-12-02-s20/ncu-source-layer_norm_65536.csv.gz: LayerNorm's
pass 2 waits on the words of the next chunk's weight and bias at the top of its loop, 12% of the stall samples;
loading them two chunks ahead lost 4-8%, exp-row-ahead.log).
Usage: PYTHONPATH=src python benchmarks/exp_row_parts.py OUT_DIR [--ops softmax,rms_norm,...] [--widths N,..]
[--variants library,p32k,..] [--tail]   (prints a table last, writes exp-row-parts.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import rooftop
from rooftop.ops import _autotune, norm_sm90, softmax_sm90
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn
from rooftop.ops import softmax as sm
from exp_norm_reload import calls, copy_bandwidth, patched

WIDTHS = (131072, 262144, 1 << 20)
OPS = ("softmax", "rms_norm", "layer_norm", "add_rms_norm", "add_layer_norm", "add_rms_norm_fp8")
WIDE_CONSUMERS = dict(CONSUMER_WARPS=8, _plans={})  # the plans' keys do not hold the warps


def variants(op: str):
    """(name, module, overrides) of the paths timed for `op`."""
    yield "library", sm, {}
    yield "full", softmax_sm90, dict(LEAN_BARRIERS=False)  # Membar's barriers all kept (session 17)
    if op == "softmax":
        yield "p32k", sm, dict(PART_MAX_N=32768)
        yield "whole", sm, dict(PART_MAX_N=1 << 40)
        yield "w8", softmax_sm90, WIDE_CONSUMERS
        return
    yield "w8", norm_sm90, WIDE_CONSUMERS
    yield "w8c4k", norm_sm90, dict(WIDE_CHUNK=4096, WIDE_BUFFERS=28, **WIDE_CONSUMERS)
    module = rn if "rms_norm" in op else ln
    if op == "add_rms_norm_fp8":
        yield "p32k", module, dict(GLUON_MAX_N=32768)
        return
    if op.startswith("add"):
        yield "parts", norm_sm90, dict(PARTS_RESIDUAL_MIN_N=65536)
        return
    yield "p32k", module, dict(GLUON_MAX_N=32768)
    yield "whole", norm_sm90, dict(row_parts=lambda *args: 0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    parser.add_argument("--variants", default=None, help="names to time (default: all of each op's)")
    parser.add_argument("--tail", action="store_true", help="also M at the multiples of the SM count around 2^27 / N")
    args = parser.parse_args()
    widths = [int(n) for n in args.widths.split(",")]
    chosen = lambda name: args.variants is None or name in args.variants.split(",")  # noqa: E731
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy = copy_bandwidth()
    rows = []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = []
    for N in widths:
        M = (1 << 27) // N
        shapes += [(m, N) for m in sorted({sms * (M // sms), M, sms * -(-M // sms)} if args.tail else {M})]
    for op in args.ops.split(","):
        for shape in shapes:
            N = shape[1]
            x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
            res = torch.randn_like(x)
            w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            if op == "softmax":
                call, eager = (lambda: rooftop.softmax(x)), (lambda: torch.softmax(x.float(), -1))
            elif op == "add_rms_norm_fp8":
                call = lambda: rooftop.rms_norm(x, w, residual=res, quant="fp8")  # noqa: E731
                eager = lambda: rn.add_rms_norm_fp8_eager(x, res, w)  # noqa: E731
            elif op.endswith("_bare"):  # no weight or bias: what their loads (from L2, every row) cost the kernel
                call = calls(op[:-len("_bare")], x, res, None, None)[0]
                eager = calls(op[:-len("_bare")], x, res, torch.ones_like(w), torch.zeros_like(b))[1]
            else:
                call, eager = calls(op, x, res, w, b)
            first = lambda out: (out[0].float() * out[1] if op.endswith("fp8")  # noqa: E731
                                 else out[0] if isinstance(out, tuple) else out)
            ref = first(eager())
            # reads and writes of x's size (the quantized y: half)
            streams = 3.5 if op.endswith("fp8") else 4 if op.startswith("add") else 2
            for name, module, values in variants(op):
                if not chosen(name):
                    continue
                with patched(module, **values):
                    y = first(call())
                    err = float((y.float() - ref.float()).norm() / ref.float().norm())
                    us = _autotune.time_ms(call) * 1e3
                pct = 100 * streams * x.nbytes / (us * 1e-6) / 1e9 / copy
                rows.append(dict(op=op, M=shape[0], N=N, variant=name, us=us, pct=pct, err=err))
                print(json.dumps(rows[-1]), flush=True)
    (out / "exp-row-parts.json").write_text(json.dumps(dict(copy_GBps=copy, rows=rows), indent=1))
    print(f"\ncopy {copy:.0f} GB/s; bf16, % of copy (GPU time); x {4220 / copy:.3f} for the session's 4220 GB/s")
    print(f"{'op':18}{'variant':10}" + "".join(f"{f'{M}x{N}':>13}" for M, N in shapes))
    for op in args.ops.split(","):
        for name, _, _ in variants(op):
            cells = {(r["M"], r["N"]): f"{r['pct']:.1f}%" for r in rows if r["op"] == op and r["variant"] == name}
            if cells:
                print(f"{op:18}{name:10}" + "".join(f"{cells.get(shape, '-'):>13}" for shape in shapes))


if __name__ == "__main__":
    main()
