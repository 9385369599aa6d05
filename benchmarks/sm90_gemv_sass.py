"""Offline sm_90 SASS of quant_matmul's batch-1 GEMV (`_qgemv_kernel`, no GPU needed): for each M = 1 candidate of
GEMV_CONFIGS with slices (those the tuner takes at the benchmark shapes) at one (N, K), its registers and spills, the
instructions a thread issues a code in the group loop with the loop's opcode histogram, and where the word loads sit:
how many of the loop's 128-bit loads come before its first FFMA (ptxas sinks each to ~3-4 rows ahead of its use
unless AHEAD ties them, journal items 161-162).
Usage: .venv/bin/python benchmarks/sm90_gemv_sass.py [--bits 4] [--shape 14336x4096] [--sass] [--pdl]
       (from the repo root)"""
import argparse
import collections
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from sm90_quant_sass import ALIGNED, TYPES, loops, sass_and_usage

sys.path.insert(0, "src")
from rooftop.ops import quant_matmul as qm  # noqa: E402


def compile_gemv(params: dict, consts: dict):
    fn = qm._qgemv_kernel
    options = {k: params.pop(k) for k in ("num_warps", "maxnreg") if k in params}
    consts = {**consts, **params}
    sig = {a: "constexpr" if a in consts else TYPES.get(a, "i32") for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or a in ALIGNED}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=dict(options, num_stages=1))


def group_loop(insts: list) -> list:
    """The longest loop holding FFMAs: the loop over a split's groups."""
    return max(loops(insts, "FFMA"), key=len, default=[])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--shape", default="14336x4096")
    ap.add_argument("--sass", action="store_true")
    ap.add_argument("--pdl", action="store_true", help="launched as a programmatic dependent (PDL_PATHS)")
    a = ap.parse_args()
    N, K = map(int, a.shape.split("x"))
    for config in qm.GEMV_CONFIGS:
        params = qm._gemv(config, 1, N, K, a.bits, 128, 132)
        if params["SLICES"] == 1:
            continue
        params.pop("path")
        params.setdefault("PREFETCH", 0)  # as _launch_path does
        params["X_ASM"] = True  # as on a GPU with x 16-byte aligned
        split = params.pop("SPLIT_K")
        consts = dict(BITS=a.bits, GROUP=128, HAS_ZERO=True, HAS_BIAS=False, SPLIT_K=split, SUM_BATCH=1,
                      PDL=a.pdl,
                      **qm._gemv_extents(params, split, 1, N, K, 128))
        insts, usage = sass_and_usage(compile_gemv(dict(params), consts).asm["cubin"])
        body = group_loop(insts)
        groups_a_pass = params["SLICES"] * params["BLOCK_N"] * 128 / (32 * params["num_warps"])  # codes a thread
        hist = collections.Counter(op.split(".")[0] for _, op, _ in body)
        ops = [op for _, op, _ in body]
        first_ffma = ops.index("FFMA") if "FFMA" in ops else len(ops)
        wide = [i for i, op in enumerate(ops) if op.startswith("LDG") and ".128" in op]
        print(f"{config}: {usage.split(' SHARED')[0]}; split {split}; loop {len(body)} instructions = "
              f"{len(body) / groups_a_pass:.2f} a code; 128-bit loads {len(wide)}, {sum(i < first_ffma for i in wide)} "
              f"before the first FFMA (at {first_ffma})")
        print("    " + "  ".join(f"{k} {n}" for k, n in hist.most_common(12)))
        if a.pdl:  # griddepcontrol.wait / .launch_dependents
            print("    " + "  ".join(f"{op} {n}" for op, n in collections.Counter(
                op for _, op, _ in insts if op.startswith(("ACQBULK", "PREEXIT"))).items()))
        if a.sass:
            for addr, op, args in body:
                print(f"      {addr:05x} {op} {args}")


if __name__ == "__main__":
    main()
