"""Experiment (session 49): how fast the SMs read from L2, on the H200: rooftop.row_sum (on-chip rows of 8192 bf16,
a read-only stream) over inputs of 4-32 MB that stay in L2 between calls (20 calls a CUDA graph, replayed back to
back, no flush) against 256 MB from HBM.

Why: LayerNorm's bias costs 8-11 points in parts where its weight alone costs 1 (exp_ln_params.py, call c): per
element pass 2 then pulls 6 bytes from L2 (x by TMA, w, b) against 4. If the L2-to-SM read rate is about 5 TB/s,
6 bytes an element caps the op near 80% of a 4.1 TB/s copy, as seen. Predicted: 5-6 TB/s from L2.
Call g (logs/h200-2026-12-04-s49/call-g): 2402 / 3613 / 4831 / 5445 / 5638 GB/s over 4 / 8 / 16 / 24 / 32 MB (each
call's launch and ramp in it), 4492 from HBM (256 MB). So the L2 serves the SMs at about 5.6-6.5 TB/s: LayerNorm in
parts at 80% moves 4.9 TB/s from L2 to the SMs (x, w, b) and 1.65 back (y), with its weight alone at 88% 3.6 and 1.8.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_l2_read.py   (GPU; a table)
"""
from __future__ import annotations

import torch

import rooftop

CALLS, REPLAYS, N = 20, 10, 8192


def gbps(mb: int) -> float:
    """GB/s of row_sum's reads over an input of `mb` MB, CALLS calls a graph replayed REPLAYS times."""
    x = torch.randn(mb * (1 << 20) // (2 * N), N, device="cuda", dtype=torch.bfloat16)
    rooftop.row_sum(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            rooftop.row_sum(x)
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        for _ in range(REPLAYS):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / (CALLS * REPLAYS))
    return x.nbytes / min(times) / 1e6


if __name__ == "__main__":
    for mb in (4, 8, 16, 24, 32, 256):
        print(f"row_sum over {mb:4d} MB: {gbps(mb):7.0f} GB/s", flush=True)
