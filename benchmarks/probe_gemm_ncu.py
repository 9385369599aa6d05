"""Diagnostic (H200): what holds rooftop.matmul at 512 x 6144 x 4096 (issue 4: 0.89x cuBLAS by graph replay, 0.95x
asked; its 128 x 192 tiles fill 128 of the 132 SMs, one tile each, 64 k-steps).

1. cuBLAS's kernel for the shape (torch.profiler's name: its tile shape and cluster) and rooftop's tuned choice,
   each timed by graph replay with L2 flushed (_autotune.time_ms), as the results file's graph column.
2. Nsight Compute of both (clocks as they run): speed of light, memory workload, compute workload, launch
   statistics (grid, cluster), occupancy. Guess under test (journal item 67, session 11's Next 5): the 128 tiles read
   2.5 MB each from L2 (320 MB in ~40 us, ~8 TB/s), so L2 -> SM bandwidth holds it, where cuBLAS multicasts a panel
   to a 2-CTA cluster (TMA multicast is not in Triton 3.6's Gluon).
   Seen (session 41, call b): cuBLAS runs nvjet 192x128, 5 stages, 2-CTA clusters, 128 CTAs as ours; SM active
   cycles alike (54.9 / 55.2 K) but 64.3 K elapsed against 60.9 K; L2 throughput 42 / 64%: not L2-bound. Graph
   replay 43.9 / 39.0 us against ncu's 37.1 / 35.8.
3. (`--flushes`) Where graph replay's extra time goes: cuBLAS, the library's choice and the 128 x 192 variant at 3
   and 4 stages, each a CUDA graph of one call replayed after a zeroing flush of 256 MB (as do_bench: L2 left full
   of dirty lines), after a reading flush (L2 full of clean lines) and back to back; and the kernel's own duration
   in the zeroing case (torch.profiler). Guess: the dirty lines' write-back under the GEMM's loads costs ours more
   (a 4-stage ring against cuBLAS's 5). Seen (call c, us after a zeroing / reading flush / none, kernel): cuBLAS
   38.3 / 37.0 / 40.0, 35.7; library (the 4-stage 128 x 192) 43.1 / 37.8 / 43.4, 40.4; 3 stages 55.0 / 47.0 / 56.6.
   A 5-stage ring with the epilogue stored from registers (no staging buffers; call d, commit a27b0a1, journal item
   268): 42.9 / 41.2 / 48.6 against 43.6 / 37.0 / 47.6 for 4 stages in the same run: not kept.

Usage (H200): PYTHONPATH=src ROOFTOP_CACHE_DIR=... python benchmarks/probe_gemm_ncu.py OUT_DIR [--flushes]
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


def flushes() -> None:
    import statistics

    import rooftop
    from rooftop.bench.timing import capture_graph
    from rooftop.ops.matmul_sm90 import Variant, WarpSpecializedPlan
    a, b = operands()
    ref = a.float() @ b.float()
    cache = torch.empty(256 * 2**20 // 4, device="cuda", dtype=torch.int32)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    providers = {"cublas": lambda: torch.matmul(a, b), "library": lambda: rooftop.matmul(a, b)}
    for v in (Variant(128, 192, 4, 2, False), Variant(128, 192, 3, 2, False)):
        out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        plan = WarpSpecializedPlan(v, a, b, True, out, None, None, None, sms)
        providers[v.name] = lambda plan=plan, out=out: (plan(a, b, out, None, None), out)[1]
    flush_kinds = {"zeroing": cache.zero_, "reading": cache.sum, "none": lambda: None}
    print(f"{'':32s}" + "".join(f"{k:>10s}" for k in flush_kinds) + "   kernel (zeroing flush)")
    for name, fn in providers.items():
        err = float((fn().float() - ref).norm() / ref.norm())
        graph = capture_graph(lambda: (fn(), fn()), fn)
        cells = []
        for flush in flush_kinds.values():  # timed here, not by bench_ms: its flush is always the zeroing one
            times = []
            for _ in range(40):
                flush()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e3)
            cells.append(statistics.median(times[5:]))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                cache.zero_()
                graph.replay()
            torch.cuda.synchronize()
        durations = [e.time_range.elapsed_us() for e in prof.events() if e.device_type.name == "CUDA"
                     and ("matmul" in e.name or "nvjet" in e.name or "gemm" in e.name)]
        kernel = statistics.median(durations) if durations else float("nan")
        print(f"{name:32s}" + "".join(f"{c:10.1f}" for c in cells) + f"   {kernel:.1f} us  (err {err:.1e})")


if __name__ == "__main__":
    if sys.argv[1] == "kernels":
        kernels()
    elif "--flushes" in sys.argv:
        flushes()
    else:
        main(sys.argv[1])
