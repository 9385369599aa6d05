"""Offline sm_90 SASS of quant_matmul's tensor-core kernel (no GPU needed): registers, spills, and the
instructions a thread issues per weight code in the main k-loop, with the loop's opcode histogram.

The k-loop is found in the SASS as the backward branch whose body holds the wgmma (HGMMA); its body
(branch target .. branch) is counted once per iteration, which consumes BLOCK_N * BLOCK_K codes per
program, BLOCK_N * BLOCK_K / (32 * num_warps) per thread.
Usage: .venv/bin/python benchmarks/sm90_quant_sass.py [--sass] [--pdl]  (from the repo root; --sass prints each loop;
       --pdl: launched as a programmatic dependent)"""
import collections
import os
import re
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, "src")
from rooftop.ops import quant_matmul as qm  # noqa: E402

BIN = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): the decode-regime candidates that matter
CONFIGS = ((16, 64, 128, 4, 4), (16, 128, 128, 4, 4), (32, 64, 128, 4, 4), (64, 64, 64, 4, 4))
TYPES = dict(x_ptr="*bf16", w_ptr="*i32", s_ptr="*bf16", z_ptr="*u8", b_ptr="*bf16", out_ptr="*bf16",
             ws_ptr="*fp32", cnt_ptr="*i32")
# integer arguments that a launch at the benchmark shapes specialises as multiples of 16
ALIGNED = ("N", "K", "x_stride", "out_stride")
SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def compile_sm90(consts: dict, warps: int, stages: int, dtype: str = "bf16"):
    fn = qm._qgemm_kernel
    types = {**TYPES, "x_ptr": f"*{dtype}", "s_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"}
    sig = {a: "constexpr" if a in consts else types.get(a, "i32") for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or a in ALIGNED}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages))


def sass_and_usage(cubin: bytes) -> tuple[list, str]:
    """[(address, opcode, operands)] of the kernel's SASS, and cuobjdump's resource line."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([BIN + "cuobjdump", "-sass", f.name], capture_output=True, text=True, check=True).stdout
        usage = subprocess.run([BIN + "cuobjdump", "--dump-resource-usage", f.name], capture_output=True, text=True,
                               check=True).stdout
    matches = (SASS_LINE.search(line) for line in sass.splitlines())
    insts = [(int(m.group(1), 16), m.group(3), m.group(4).strip()) for m in matches if m]
    return insts, re.search(r"REG:\d+.*", usage).group(0)


def loops(insts: list, opcode: str) -> list:
    """The loops (a backward BRA and its body, as instructions) whose body holds an `opcode...` instruction."""
    found = []
    for i, (addr, op, args) in enumerate(insts):
        target = re.search(r"0x([0-9a-f]+)", args)
        if op.startswith("BRA") and target and int(target.group(1), 16) <= addr:
            body = [x for x in insts[:i + 1] if x[0] >= int(target.group(1), 16)]
            if any(x[1].startswith(opcode) for x in body):
                found.append(body)
    return found


def k_loop(insts: list) -> list:
    """The instructions of the innermost loop whose body holds an HGMMA."""
    return min(loops(insts, "HGMMA"), key=len, default=[])


def report(name: str, consts: dict, warps: int, stages: int, show: bool, dtype: str = "bf16") -> None:
    c = compile_sm90(consts, warps, stages, dtype)
    insts, usage = sass_and_usage(c.asm["cubin"])
    body = k_loop(insts)
    codes = consts["BLOCK_N"] * consts["BLOCK_K"] / (32 * warps)
    regs = re.search(r"REG:(\d+)", usage).group(1)
    stack = re.search(r"STACK:(\d+)", usage).group(1)
    shared = re.search(r"SHARED:(\d+)", usage).group(1)
    hist = collections.Counter(op.split(".")[0] for _, op, _ in body)
    print(f"{name}: REG {regs} STACK {stack} SHARED {shared}; k-loop "
          f"{len(body)} instructions / {codes:g} codes a thread = {len(body) / codes:.2f} a code")
    print("    " + "  ".join(f"{k} {n}" for k, n in hist.most_common()))
    if show:
        for addr, op, args in body:
            print(f"      {addr:05x} {op} {args}")


def main() -> None:
    show = "--sass" in sys.argv
    for bits, dtype, configs in ((4, "bf16", CONFIGS), (8, "bf16", CONFIGS), (4, "fp16", CONFIGS[:1])):
        for bm, bn, bk, warps, stages in configs:
            consts = dict(BITS=bits, GROUP=128, HAS_ZERO=True, HAS_BIAS=False, BLOCK_M=bm, BLOCK_N=bn,
                          BLOCK_K=bk, SWAP_AB=True, PAIRED_ASM=True,  # as a launch on a GPU, scales in x's dtype
                          SUM_BATCH=max(1, qm.SUM_REGS["dot"] // (bm * bn // (32 * warps))), PDL="--pdl" in sys.argv)
            report(f"int{bits} {dtype} {bm}x{bn}x{bk} w{warps} s{stages}", consts, warps, stages, show, dtype)


if __name__ == "__main__":
    main()
