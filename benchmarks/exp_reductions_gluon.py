"""Experiment (session 48): the row reductions' wide rows streamed through a TMA ring (ops/reductions_sm90.py)
against the Triton paths, on the H200, bf16, M * N = 2^27.

Predicted: the Triton paths hold at most a row (on chip, one program an SM past 40960) or two 16 KB tiles
(looped) of loads in flight a program and stop loading between a program's rows: 87.5-89.4% of the 1 GiB copy by
the results harness at 65536-262144 (~91-92 of a same-run copy). A ring of 13 chunks in flight across rows should
read like the Gluon softmax's pass 1 (92-96% of a copy with a write behind it): ~95 same-run, every width.
Variants: "library" (the Gluon path where reductions.uses_gluon takes it), "triton" (GLUON_ENABLED off), "w8"
(8 consumer warps); at 16384 "gluon" (GLUON_MIN_N lowered) against the library's on-chip rows.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_reductions_gluon.py OUT_DIR   (GPU; a table last)
       .venv/bin/python benchmarks/exp_reductions_gluon.py --compile-only             (no GPU: sm_90 resources)
"""
from __future__ import annotations

import sys
from pathlib import Path

from rooftop.ops import reductions as rd
from rooftop.ops import reductions_sm90 as rs

WIDTHS = (32768, 65536, 262144)
KINDS = ("row_sum", "row_max")
OFF = [(rd, dict(GLUON_ENABLED=False))]


VARIANTS = {"library": [], "triton": OFF, "b2": [(rs, dict(BATCH=2))], "b4": [(rs, dict(BATCH=4))],
            "nofence": [(rs, dict(FENCE=False))], "b2_nofence": [(rs, dict(BATCH=2, FENCE=False))],
            "w2": [(rd, dict(GLUON_WARPS=2))], "b2_w8": [(rs, dict(BATCH=2)), (rd, dict(GLUON_WARPS=8))]}


def cases() -> dict:
    return {(op, N): VARIANTS for op in KINDS for N in WIDTHS}


def compile_only() -> None:
    from gluon_sm90 import compile_sm90, read_cubin
    from rooftop.ops.softmax_sm90 import BOX_COLS, CHUNK, LOADER_REGS, RING_LAYOUT, STAGES

    for reduction, finish in (("sum", "none"), ("sumsq", "sqrt"), ("max", "none")):
        for N, flat, warps, batch in ((65536, True, 4, 1), (65536, True, 4, 4), (65536, True, 8, 2),
                                      (40008, False, 4, 1)):
            box = [CHUNK // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
            consts = dict(REDUCTION=reduction, FINISH=finish, EVEN=N % CHUNK == 0, FLAT=flat, CHUNK_N=CHUNK,
                          CHUNKS=-(-N // CHUNK), RING=STAGES, BATCH=batch, FENCE=True, LOADER_REGS=LOADER_REGS, LEAN=rs.LEAN_BARRIERS)
            sig = dict(x_desc=f"tensordesc<bf16{box},{RING_LAYOUT!r}>", out_ptr="*bf16", M="i32", N8="i32")
            sig.update({name: "constexpr" for name in consts})
            cubin = read_cubin(compile_sm90(rs._reduce_kernel, sig, consts, warps))
            print(f"{reduction}/{finish} N={N} flat={flat} warps={warps} batch={batch}: {cubin.resources}, setmaxnreg "
                  f"{cubin.maxnreg}, bare CTA barriers {cubin.bare_cta_barriers}, spills {cubin.local_memory_ops}")


def main() -> None:
    if sys.argv[1:] == ["--compile-only"]:
        compile_only()
        return
    from exp_row_tail import time_cases
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-reductions-gluon.json", cases())


if __name__ == "__main__":
    main()
