r"""Probe: each kernel of one cold call of a registry op under Nsight Compute, apart (rooftop profile sums them).

Why (session 68): one token of Mixtral-8x7B's int4 experts runs at 61-66% of the copy rate (H100) where the dense
int4 GEMV reads a weight of the same size (28672 x 8192) at ~78% (H200): which of the two kernels (gate / up, down)
holds the time, at what DRAM throughput and occupancy. Same ncu figures as rooftop.profile.ncu (clocks unlocked,
caches flushed before each kernel), one line a kernel.
Usage: PYTHONPATH=src python benchmarks/probe_op_kernels.py OP SHAPE [OP SHAPE ...]   (SHAPE as 1,8,2,4096,14336)
"""
import os
import subprocess
import sys
import tempfile

from rooftop.profile.ncu import METRICS, find_ncu, parse_csv


def main(argv):
    ncu = find_ncu()
    if ncu is None:
        sys.exit("probe_op_kernels: ncu (Nsight Compute) is not installed")
    for op, shape in zip(argv[::2], argv[1::2]):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "ncu.csv")
            run = subprocess.run([ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "rooftop_profile/",
                                  "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(METRICS),
                                  "--log-file", log, sys.executable, "-m", "rooftop.profile.ncu", op, shape, "bf16",
                                  "rooftop"],
                                 capture_output=True, text=True, timeout=300)
            kernels = parse_csv(open(log).read()) if os.path.exists(log) else []
        print(f"{op} {shape}: {len(kernels)} kernels" + ("" if kernels else f" (ncu: {run.stderr[-400:]})"))
        for k in kernels:
            print(f"  {k['kernel'][:40]:40s} grid {k.get('grid_size', 0):7.0f} x {k.get('block_size', 0):4.0f} "
                  f"{k.get('duration_us', 0):8.1f} us  DRAM {k.get('dram_throughput_pct', 0):5.1f}% "
                  f"{k['dram_bytes'] / 1e6:7.1f} MB  warps {k.get('achieved_occupancy_pct', 0):5.1f}% of "
                  f"{k.get('theoretical_occupancy_pct', 0):5.1f}  regs {k.get('registers_per_thread', 0):.0f}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
