"""Diagnostic (H200): Nsight Compute readings of the wide-row kernels, to say what holds them under the copy.

1. The Gluon kernels at N = 65536 (bf16, M * N = 2^27; L2 flushed by ncu, clocks as they run): rms_norm,
   layer_norm (6-7 % under rms_norm at every width, journal item 90), softmax (86 %, 90 % wanted; the ring-copy
   diagnostic of session 9 ran 93.5 %) and add_rms_norm quantized to fp8 (in parts of 32768). Sections: speed of
   light, warp state, scheduler, memory workload, occupancy; every stall reason's cycles an issued instruction.
2. The reductions' do_bench gap (journal item 91: row_sum at N = 65536 84 % of copy by do_bench, 104 % on the GPU
   alone). Guess: do_bench's L2 flush (zeroing 256 MB) leaves up to an L2 of dirty lines that the next kernel
   writes back to DRAM; a kernel that only reads pays for those writes, one that writes as much as it reads pays
   them in any case (its own dirty lines are left for the next). Read here: DRAM bytes written during row_sum
   launched right after a zeroing flush, after a reading flush (a sum over the same buffer), and after nothing,
   with ncu's cache control off so that the flush stays as it was left.

Usage (H200): PYTHONPATH=src python benchmarks/ncu_rowops_diag.py OUT_DIR
(runs itself under ncu: `kernels` and `flush` are the profiled halves.)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import torch

N = 65536
M = (1 << 27) // N
SECTIONS = ["SpeedOfLight", "WarpStateStats", "SchedulerStats", "MemoryWorkloadAnalysis", "Occupancy"]
# every stall reason, as cycles a warp spends on it between two issued instructions
STALLS = r"regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
FLUSH_METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
FLUSHES = ("zeroing", "reading", "none")


def kernels() -> None:
    """One call each of the Gluon paths: rms_norm, layer_norm, softmax, add_rms_norm quantized to fp8 (in parts of
    32768)."""
    import rooftop
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    for fn in (lambda: rooftop.rms_norm(x, w), lambda: rooftop.layer_norm(x, w, b), lambda: rooftop.softmax(x),
               lambda: rooftop.rms_norm(x, w, residual=r, quant="fp8")):
        fn()
    torch.cuda.synchronize()


def flush() -> None:
    """row_sum once, then after each kind of flush three times (the profiled launches are row_sum's only, in
    this order: FLUSHES)."""
    import rooftop
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")  # do_bench's flush buffer
    rooftop.row_sum(x)
    for name in FLUSHES:
        for _ in range(3):
            {"zeroing": cache.zero_, "reading": cache.sum, "none": lambda: None}[name]()
            rooftop.row_sum(x)
    torch.cuda.synchronize()


def _ncu(args: list[str], half: str, out_dir: str) -> str:
    """ncu's text output of this script's `half` (kernels, flush), also written to OUT_DIR/half.txt."""
    run = subprocess.run(["ncu", "--clock-control", "none", *args, sys.executable, __file__, half],
                         capture_output=True, text=True)
    text = run.stdout + run.stderr
    with open(f"{out_dir}/{half}.txt", "w") as f:
        f.write(text)
    return text


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    kernels_regex = "regex:_norm_kernel|_softmax_kernel"
    text = _ncu([*(f"--section={s}" for s in SECTIONS), "--metrics", STALLS, "-k", kernels_regex], "kernels", out_dir)
    keep = re.compile(r"^\s*(_norm_kernel|_softmax_kernel|Duration|DRAM Throughput|Memory Throughput|L2 Cache "
                      r"Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issued Warp|No Eligible|"
                      r"Active Warps Per|Eligible Warps|Warp Cycles Per Issued|One or More|issue_stalled)")
    print("\n".join(line for line in text.splitlines() if keep.search(line) and not line.rstrip().endswith(" 0")))
    text = _ncu(["--cache-control", "none", "--metrics", ",".join(FLUSH_METRICS), "-k", "regex:row_reduce"], "flush",
                out_dir)
    print(f"row_sum launches: the first, then 3 each after: {', '.join(FLUSHES)}")
    print("\n".join(line for line in text.splitlines() if re.search(r"row_reduce|dram__|gpu__time", line)))


if __name__ == "__main__":
    {"kernels": kernels, "flush": flush}.get(sys.argv[1], lambda: main(sys.argv[1]))()
