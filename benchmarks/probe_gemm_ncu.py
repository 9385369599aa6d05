"""Diagnostic (H200): what holds rooftop.matmul at 512 x 6144 x 4096 (issue 4: 0.89x cuBLAS by graph replay, 0.95x
asked; its 128 x 192 tiles fill 128 of the 132 SMs, one tile each, 64 k-steps).

1. cuBLAS's kernel for the shape (torch.profiler's name: its tile shape and cluster) and rooftop's tuned choice,
   each timed by graph replay with L2 flushed (_autotune.time_ms), as the results file's graph column.
2. Nsight Compute of both (clocks as they run): speed of light, memory workload, compute workload, launch
   statistics (grid, cluster), occupancy. Guess under test (NOTES item 67, session 11's Next 5): the 128 tiles read
   2.5 MB each from L2 (320 MB in ~40 us, ~8 TB/s), so L2 -> SM bandwidth holds it, where cuBLAS multicasts a panel
   to a 2-CTA cluster (TMA multicast is not in Triton 3.6's Gluon).

Usage (H200): PYTHONPATH=src ROOFTOP_CACHE_DIR=... python benchmarks/probe_gemm_ncu.py OUT_DIR
(tunes and times in-process, then runs itself under ncu: `kernels` is the profiled half, inside an NVTX range.)
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import torch

M, N, K = 512, 6144, 4096
SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "LaunchStats", "Occupancy"]


def operands() -> tuple[torch.Tensor, torch.Tensor]:
    """a [M, K] and b = w.t() of an nn.Linear weight [N, K], as the results file's matmul rows."""
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / math.sqrt(K)
    return a, w.t()


def kernels() -> None:
    """One call of each inside the NVTX range `probe` (rooftop's choice from the tuner cache main filled)."""
    import rooftop
    a, b = operands()
    rooftop.matmul(a, b)
    torch.matmul(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("probe")
    rooftop.matmul(a, b)
    torch.matmul(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def main(out_dir: str) -> None:
    import rooftop
    from rooftop.ops import _autotune
    os.makedirs(out_dir, exist_ok=True)
    a, b = operands()
    ref = a.float() @ b.float()
    out = rooftop.matmul(a, b)  # tunes, caching the choice on disk for the profiled half
    print(f"rel err {float((out.float() - ref).norm() / ref.norm()):.2e}")
    flops = 2 * M * N * K
    for name, fn in (("rooftop", lambda: rooftop.matmul(a, b)), ("cublas", lambda: torch.matmul(a, b))):
        us = _autotune.time_ms(fn) * 1e3
        print(f"{name}: {us:.1f} us, {flops / us / 1e6:.0f} TFLOP/s (graph replay, L2 flushed)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        rooftop.matmul(a, b)
        torch.matmul(a, b)
        torch.cuda.synchronize()
    print("kernels:", "; ".join(sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})))
    run = subprocess.run(["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "probe/",
                          *(f"--section={s}" for s in SECTIONS), sys.executable, __file__, "kernels"],
                         capture_output=True, text=True)
    text = run.stdout + run.stderr
    with open(f"{out_dir}/ncu.txt", "w") as f:
        f.write(text)
    keep = re.compile(r"^\s*(\S+.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)|Duration|DRAM Throughput|Memory Throughput|"
                      r"L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|L1/TEX Hit|L2 Hit|"
                      r"Registers Per|Cluster Size|Grid Size|Block Size|Shared Memory Configuration Size|"
                      r"Dynamic Shared|Achieved Occupancy|Executed Ipc A|Issue Slots Busy|SM Busy|Mem Busy|"
                      r"Max Bandwidth|L2 Compression)")
    print("\n".join(line[:160] for line in text.splitlines() if keep.search(line)))


if __name__ == "__main__":
    kernels() if sys.argv[1] == "kernels" else main(sys.argv[1])
