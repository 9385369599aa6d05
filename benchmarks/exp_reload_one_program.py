"""Experiment: the reload kernels at 49152-65536 with one program an SM (maxnreg=64 over 32 warps: 1024 threads x 64
registers fill the SM's register file), on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed).

Why: softmax's reload kernel (8192-wide tiles over 32 warps) ran 95.7 / 90.5 / 74.2% of copy at 49152 / 57344 / 65536
(session 37, call b). Offline (sm_90, benchmarks/sm90_loads.py) it compiles to 32 registers at every width (two
programs an SM) with no spills up to 7 tiles (8 bytes of stack at 8), so the fall is not registers: two programs'
rows, 2 x 96 / 112 / 128 KB, against the SM's 256 KB of L1 and shared memory, leave pass 2's re-reads to L2 past
~57344. With maxnreg=64 ptxas gives it 64 registers (6 of 8 tiles' loads up front at 65536, no spills): one program an
SM, whose row (128 KB) fits L1. The price: an SM's rows no longer overlap (pass 2 of one, pass 1 of the next).
Prediction: at 65536 softmax >= 90% (the Gluon ring 89.3-90.0), RMSNorm's reload kernel >= 89% (Gluon 87.3-89.0), the
Welford LayerNorm in 8192-wide tiles >= 85% (Gluon 84.9); at 32768 / 49152 below the two-program kernels.
Variants per op and width: the library; its reload kernel stretched to the width ("reload"); the same with maxnreg=64
("reload_r64"); LayerNorm's in 16384-wide tiles too. Seen (session 37, calls f-h): rms_norm 96.8-96.9% at 65536 with
one program (Gluon 89.2-89.6; wired since: the library's rms_norm is "reload_r64" past 40960), softmax 70.5 (lost),
LayerNorm's 8192-wide tiles 78.0 (Gluon 84.9). Session 38 (call a) timed pass 2 loading each tile before the previous
tile's store too (journal item 243): softmax 65536 73.8 against 83.9 (library, Gluon, 89.0); LayerNorm 32768 90.8
against 89.0 but 72.3 against 87.9 at 40960, 77.4-84.4 at 65536 against the library's 84.8: no consistent win,
dropped. Item 244: pass 2's w and b (and RMSNorm's w) loaded past L1 (ld.cg, "_l2"). Seen (session 38, call b):
LayerNorm through L1 / past it 32768 89.5 / 91.9, 40960 88.6 / 93.6 (wired), 24576 92.2 / 90.4, 65536 71.4 / 71.1; one
program an SM lost everywhere (72-81); RMSNorm's w past L1 lost (94.9 / 96.7 at 65536; dropped). Items 245-247: rows
past the reload widths split into chunks a program each that exchange their statistics (variants "*_split", removed
since): all lost in call b (LayerNorm 64-72 against Gluon's 77-78, softmax 75.8 against 88.5 at 65536, RMSNorm 76.6
against 86.0 at 131072), for a reason seen offline after: the exchange's acquire atomics empty the SM's L1
(CCTL.IVALL), so pass 2 re-read the chunk from L2. Item 248: the exchange with relaxed atomics (no CCTL.IVALL in the
SASS) lost as much (call c: softmax 75.7 / 76.5 / 74.1 against 88.6 / 78.6 / 77.1 at 65536 / 131072 / 262144, RMSNorm
78.1-84.2 against 85.4-85.8, LayerNorm 73.7-75.7 against 76.6-84.3): the split paths are gone.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_reload_one_program.py OUT_DIR [--widths 32768,65536]
[--ops softmax,rms_norm] (prints a table last, writes exp-reload-one-program.json)
"""
from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

import torch

from exp_norm_reload import ELEMENTS, calls, copy_bandwidth, measured, patched
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn
from rooftop.ops import softmax as sm

WIDE = 1 << 20
TWO = dict(RELOAD_ONE_PROGRAM_MIN_N=WIDE)  # rms_norm's reload kernel kept at two programs an SM
# op: (module, its reload kernel, [(variant, switches, maxnreg)]): the kernel stretched to every width here, at two
# programs an SM ("reload") and at one (maxnreg=64: "_r64"); LayerNorm's Welford kernel in 16384-wide tiles too
# (offline sm_90 at 65536: 8 x 8192-wide tiles leave pass 2 a load round trip a tile, 4 x 16384 half as many)
VARIANTS = {
    "softmax": (sm, sm._softmax_reload_kernel, [("reload", dict(RELOAD_MAX_BYTES=WIDE), None),
                                                ("reload_r64", dict(RELOAD_MAX_BYTES=WIDE), 64)]),
    "rms_norm": (rn, rn._rms_norm_reload_kernel, [("reload", dict(RELOAD_MAX_N=WIDE, RELOAD_MAX_BYTES=WIDE, **TWO),
                                                   None),
                                                  ("reload_r64", dict(RELOAD_MAX_N=WIDE, RELOAD_MAX_BYTES=WIDE), 64)]),
    "add_rms_norm": (rn, rn._rms_norm_reload_kernel, [("reload", dict(RELOAD_RESIDUAL_MAX_N=WIDE), None),
                                                      ("reload_r64", dict(RELOAD_RESIDUAL_MAX_N=WIDE), 64)]),
    # LayerNorm's Welford kernel stretched to every width, w and b through L1 or past it ("_l2")
    "layer_norm": (ln, ln._layer_norm_welford_kernel,
                   [(name + policy_name + suffix, dict(WELFORD_WIDE_MAX_N=WIDE, WELFORD_WIDE_RBLOCK=tile,
                                                       WELFORD_PARAMS_PAST_L1_MIN_N=past), regs)
                    for name, tile in (("reload", 8192), ("reload_t16384", 16384))
                    for policy_name, past in (("", WIDE), ("_l2", 0))
                    for suffix, regs in (("", None), ("_r64", 64))]),
    # with a residual the Welford kernel stretched past WELFORD_MAX_N in the wide rows' 8192-wide tiles
    "add_layer_norm": (ln, ln._layer_norm_welford_kernel,
                       [("welford" + policy_name, dict(WELFORD_MAX_N=WIDE, WELFORD_RBLOCK=8192, WELFORD_WARPS=32,
                                                       WELFORD_PARAMS_PAST_L1_MIN_N=past), None)
                        for policy_name, past in (("", WIDE), ("_l2", 0))]),
}


@contextlib.contextmanager
def capped(module, kernel, maxnreg: int):
    """The module's launches of `kernel` with maxnreg=`maxnreg`."""
    real = module.launch

    def launch(fn, *args, **kwargs):
        return real(fn, *args, **({**kwargs, "maxnreg": maxnreg} if fn is kernel else kwargs))

    with patched(module, launch=launch):
        yield


def run_call(op: str, x, res, w, b):
    if op == "softmax":
        return lambda: sm.softmax(x), lambda: torch.softmax(x, -1)
    return calls(op, x, res, w, b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default="32768,49152,57344,65536")
    parser.add_argument("--ops", default="softmax,rms_norm,add_rms_norm,layer_norm")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for op in args.ops.split(","):
        module, kernel, variants = VARIANTS[op]
        for N in map(int, args.widths.split(",")):
            x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
            res, w, b = torch.randn_like(x), torch.randn(N, device="cuda", dtype=x.dtype), torch.randn_like(x[0])
            run, eager = run_call(op, x, res, w, b)
            ref = eager()
            ref = ref[0] if isinstance(ref, tuple) else ref
            nbytes = (4 if op.startswith("add") else 2) * x.nbytes
            rows.append(measured(op, N, "library", run, ref, nbytes, copy_gbps))
            for name, switches, maxnreg in variants:
                with patched(module, **switches), (capped(module, kernel, maxnreg) if maxnreg
                                                   else contextlib.nullcontext()):
                    rows.append(measured(op, N, name, run, ref, nbytes, copy_gbps))
            (out / "exp-reload-one-program.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows),
                                                                        indent=1))
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27")
    for op in args.ops.split(","):
        for N in map(int, args.widths.split(",")):
            print(f"{op:14s} {N:6d} " + "  ".join(f"{r['provider']} {r['pct']:5.1f}" for r in rows
                                                  if r["op"] == op and r["N"] == N))


if __name__ == "__main__":
    main()
