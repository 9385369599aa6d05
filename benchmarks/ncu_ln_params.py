"""Diagnostic (H200): Nsight Compute readings of what LayerNorm's weight and bias cost its wide rows (NOTES items
252-253): exp_ln_sums.py's kernel ran 96-100% of copy without them and 81-94% with them (session 39, calls b-c),
and loading them 1-3 tiles ahead in pass 2 moved 65536 only from 81 to 85%: their L2 latency is not all of it.
Profiled, bf16, M * N = 2^27: at 65536 (one program an SM) the kernel with w and b, without, with them 3 tiles
ahead, and RMSNorm's reload kernel (w only, 94-96%); at 32768 (two programs an SM) with and without.
Read: L1 and L2 throughput (% of peak), L1 hit rate, L2 sectors read, the stall reasons an issued instruction.
Usage (H200): PYTHONPATH=src:benchmarks python benchmarks/ncu_ln_params.py OUT_DIR   (runs itself under ncu)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import torch

from ncu_rowops_diag import SECTIONS, STALLS

METRICS = ["l1tex__t_sector_hit_rate.pct", "lts__t_sectors_srcunit_tex_op_read.sum",
           "l1tex__throughput.avg.pct_of_peak_sustained_active", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
KEEP = re.compile(r"^\s*(_ln_sums|_rms_norm|Duration|DRAM Throughput|L1/TEX Hit|L2 Hit|L2 Cache Throughput|"
                  r"Achieved Occupancy|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued|l1tex__|lts__|"
                  r"dram__|smsp__average_warps_issue_stalled_(long_scoreboard|lg_throttle|mio_throttle|barrier|"
                  r"short_scoreboard|wait|drain|membar|math_pipe_throttle|tex_throttle|no_instruction))")


def kernels() -> None:
    """The profiled launches, in order: at 65536 sums, sums_bare, sums_a3, rms_norm (library); at 32768 sums,
    sums_bare."""
    import rooftop
    from exp_ln_sums import sums_layer_norm
    for N in (65536, 32768):
        x = (1e4 + 64 * torch.randn((1 << 27) // N, N, device="cuda")).to(torch.bfloat16)
        w, b = torch.randn(N, device="cuda", dtype=x.dtype), torch.randn(N, device="cuda", dtype=x.dtype)
        sums_layer_norm(x, w, b, False)
        sums_layer_norm(x, None, None, False)
        if N == 65536:
            sums_layer_norm(x, w, b, False, ahead=3)
            rooftop.rms_norm(x, w)
    torch.cuda.synchronize()


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run(["ncu", "--clock-control", "none", *(f"--section={s}" for s in SECTIONS), "--metrics",
                          ",".join([STALLS, *METRICS]), "-k", "regex:_ln_sums|_rms_norm", sys.executable, __file__,
                          "kernels"], capture_output=True, text=True)
    text = run.stdout + run.stderr
    with open(f"{out_dir}/ncu-ln-params.txt", "w") as f:
        f.write(text)
    print("\n".join(line for line in text.splitlines() if KEEP.search(line) and not line.rstrip().endswith(" 0")))


if __name__ == "__main__":
    kernels() if sys.argv[1] == "kernels" else main(sys.argv[1])
