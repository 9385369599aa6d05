"""Where a row kernel's loads issue, offline (no GPU): compile for sm_90 and print, from the SASS, the positions of
its global loads (LDG), barriers (BAR) and stores (STG), and per loop how many instructions lie between each load and
the first instruction that reads what it loaded. Session 36's lesson (journal items 227, 231): a kernel that keeps a
few tiles in flight loses them where a cross-program reduction (a barrier) or a conversion of the previous tile
sits between one tile's load and the next one's; the looped reductions (next tile loaded after the fold: 87% of
copy, before it: 103%) and the RMSNorm reload kernel (a reduction a tile: 93%, one at the end: 98.7%) showed it.
Usage: .venv/bin/python benchmarks/sm90_loads.py [case ...]   (from the repo root; no case: all of CASES)
"""
from __future__ import annotations

import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, "src")
sys.path.insert(0, "benchmarks")
from rooftop.ops import layer_norm as ln, reductions as red, rms_norm as rn, softmax as sm
from sm90_quant_sass import loops, sass_and_usage


def row_types(name: str) -> str:
    """The signature type of a row kernel's argument by its name: bf16 rows, fp32 scalars and scales."""
    if name.endswith("_ptr"):
        return "*fp32" if name in ("scale_ptr", "part_ptr") else "*bf16"
    return "fp32" if name in ("eps", "w_offset") else "i32"


CASES = {  # name: (kernel, constexprs, warps)
    "reduce_looped_max": (red._row_reduce_looped_kernel, dict(REDUCTION="max", FINISH="none", TILE=4096, PDL=True),
                          8),
    "rms_reload_32768": (rn._rms_norm_reload_kernel, dict(HAS_RESIDUAL=False, HAS_WEIGHT=True, TILE=16384, PARTS=2),
                         32),
    "rms_reload_res_65536": (rn._rms_norm_reload_kernel, dict(HAS_RESIDUAL=True, HAS_WEIGHT=True, TILE=16384,
                                                              PARTS=4), 32),
    "rms_looped": (rn._rms_norm_looped_kernel, dict(HAS_RESIDUAL=False, HAS_WEIGHT=True, QUANT=0, QMAX=1.0,
                                                    TILE=16384, X_POLICY="evict_last", EVEN=True), 32),
    **{f"ln_welford_{n}_{tile}_{policy}": (
        ln._layer_norm_welford_kernel, dict(HAS_RESIDUAL=False, HAS_WEIGHT=True, HAS_BIAS=True, N=n, RBLOCK=tile,
                                            PARAM_POLICY=policy), 32)
       for n, tile in ((32768, 16384), (32768, 8192), (65536, 16384)) for policy in ("evict_last", "l2")},
    **{f"softmax_reload_{parts}x8192": (sm._softmax_reload_kernel, dict(LOG=False, TILE=8192, PARTS=parts), 32)
       for parts in (4, 6, 7, 8)},
}


def compile_sm90(fn, constexprs: dict, warps: int):
    """The kernel compiled for sm_90 as a launch on aligned rows specialises it (pointers 16-byte aligned, N and the
    row strides multiples of 16): without that the loads do not vectorise and the SASS is not the GPU's."""
    sig = {a: "constexpr" if a in constexprs else row_types(a) for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or (sig[a] == "i32" and (a == "N" or "stride" in a))}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps))


def load_to_use(body: list) -> list[int]:
    """Per LDG of a loop body: instructions until the first one that reads a register it writes (around the loop)."""
    found = []
    for i, (_, op, args) in enumerate(body):
        dest = re.match(r"R(\d+)", args)
        if not op.startswith("LDG") or not dest:
            continue
        width = int(re.search(r"\.(\d+)", op).group(1)) // 32 if re.search(r"\.(64|128)", op) else 1
        regs = {f"R{int(dest.group(1)) + j}" for j in range(width)}
        for d in range(1, len(body)):
            _, _, later = body[(i + d) % len(body)]
            if regs & set(re.findall(r"R\d+", later.split(",", 1)[1] if "," in later else "")):
                found.append(d)
                break
    return found


def report(name: str) -> None:
    fn, constexprs, warps = CASES[name]
    insts, usage = sass_and_usage(compile_sm90(fn, constexprs, warps).asm["cubin"])
    ops = [op for _, op, _ in insts]
    where = {kind: [i for i, op in enumerate(ops) if op.startswith(kind)] for kind in ("LDG", "BAR", "STG")}
    print(f"{name}: {usage}, {len(ops)} instructions; " + "; ".join(f"{k} at {v[:16]}" for k, v in where.items()))
    for body in loops(insts, "LDG"):
        print(f"  loop of {len(body)}: load-to-use {load_to_use(body)[:12]}")


if __name__ == "__main__":
    for case in sys.argv[1:] or CASES:
        report(case)
