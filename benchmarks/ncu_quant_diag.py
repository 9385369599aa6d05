"""Diagnostic (H200, issue 6): where the W4A16 Gluon kernel (ops/quant_matmul_sm90.py) spends its time, by Nsight
Compute's PC sampling per SASS instruction.

Why: at M = 64, 28672 x 8192 the 64 x 256 variant runs ~95 us, 128 k-steps a program: ~1460 cycles a k-step, where
each of its limits alone is about half that (the step's MMA at the tensor peak ~512 cycles, its ~96 KB of shared
memory traffic ~750 cycles at 128 B a cycle, the two dequantizer warp groups' ~436 issue cycles a scheduler, the
words' DRAM read at 1.5 of 4.2 TB/s). A sum of those, not their max, would mean the partitions wait on each other:
the samples of the consumers' waits (on b_ready: dequantizer-bound) against the dequantizers' (on mma_done:
MMA-bound; on w_ready: the words' loads) and their fences and barriers say which.

Profiled: quant_matmul_sm90's RS_M64_N256 at 64 x 28672 x 8192, M256_N128 at 256 x 28672 x 8192 and RS_M64_N128 at 64
x 28672 x 8192 (bf16, int4 group 128 with zero points), each launched twice (compile, then the one read). Written per
shape s: OUT/quant-s.ncu-rep, OUT/details-s.txt
(sections), OUT/source-s.csv (per SASS instruction); printed: the instructions holding most stall samples.
Usage (H200): PYTHONPATH=src:benchmarks python benchmarks/ncu_quant_diag.py OUT_DIR [0,1]   (runs itself under
ncu; the second argument: which SHAPES)
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import torch

SHAPES = ((64, "RS_M64_N256"), (256, "M256_N128"), (64, "RS_M64_N128"))  # quant_matmul_sm90's variants
# (session 18's readings: shape 0 then the store-through-shared-memory 64 x 256 variant, since replaced, and shape 2
# the first form of the register-A kernel)
N, K = 28672, 8192


def kernels(shape: int) -> None:
    """SHAPES[shape]'s variant launched twice (ncu reads the second)."""
    from rooftop.ops import quant_matmul_sm90 as qsm90
    from rooftop.ops.quant_matmul import quantize_weight
    torch.manual_seed(0)
    qw = quantize_weight(torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5, 4, 128)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, name = SHAPES[shape]
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    plan = qsm90.plan(getattr(qsm90, name).config(), x, qw.packed, qw.scales, qw.zeros, None, sms)
    call = lambda: plan(x, qw.packed, qw.scales, qw.zeros, None, out)  # noqa: E731
    call()
    call()
    torch.cuda.synchronize()


def top_instructions(table: str, count: int = 25) -> list[str]:
    """The `count` SASS lines of a source page (CSV) with the most warp-stall samples, with their share."""
    lines = table.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"Address"')), len(lines))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))  # after the "Kernel Name" line
    if not rows:
        return ["(no rows)"]
    key = next((k for k in rows[0] if "Warp Stall Sampling (All" in k), None)
    if key is None:
        return [f"(columns: {list(rows[0])[:12]})"]
    value = lambda r: float((r.get(key) or "0").replace(",", "") or 0)  # noqa: E731
    total = sum(value(r) for r in rows) or 1.0
    best = sorted(rows, key=value, reverse=True)[:count]
    return [f"{100 * value(r) / total:5.1f}%  {r.get('Address', '?'):>8}  {r.get('Source', '')[:90]}" for r in best]


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for shape, (M, name) in enumerate(SHAPES):
        if len(sys.argv) > 2 and str(shape) not in sys.argv[2].split(","):
            continue
        rep = f"{out_dir}/quant-{shape}"
        run = subprocess.run(["ncu", "--set", "full", "--import-source", "no", "-k", "regex:w4a16",
                              "--launch-skip", "1", "--launch-count", "1", "-f", "-o", rep, sys.executable, __file__,
                              "kernels", str(shape)],
                             capture_output=True, text=True)
        print(run.stdout[-1500:], run.stderr[-1500:])
        pages = {}
        for page, extra in (("details", []), ("source", ["--csv", "--print-source", "sass"])):
            done = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", page, *extra], capture_output=True,
                                  text=True)
            pages[page] = done.stdout
            with open(f"{out_dir}/{page}-{shape}.{'csv' if extra else 'txt'}", "w") as f:
                f.write(done.stdout + done.stderr)
        print(f"== {name} at {M} x {N} x {K}: the instructions holding the most stall samples")
        print("\n".join(top_instructions(pages["source"])))


if __name__ == "__main__":
    kernels(int(sys.argv[2])) if sys.argv[1] == "kernels" else main(sys.argv[1])
