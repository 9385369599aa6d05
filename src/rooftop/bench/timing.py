"""The one timing helper: median of CUDA-event timings (triton.testing.do_bench flushes L2 between runs)."""
from __future__ import annotations

from typing import Callable, Sequence

import torch


def bench_ms(fn: Callable[[], object], warmup_ms: float = 25, rep_ms: float = 100) -> float:
    """Median milliseconds of `fn()` on the current CUDA device."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def capture_graph(warm_up: Callable[[], object], body: Callable[[], object]) -> "torch.cuda.CUDAGraph":
    """A CUDA graph of `body()`, captured after `warm_up()` ran on a side stream (kernels compiled,
    launch choices made, memory allocated outside the capture)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        warm_up()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph


def graph_replay_us(calls: Sequence[Callable[[], object]], repeat: int = 100) -> float:
    """Microseconds per call on the GPU alone: the thunks `calls`, `repeat` times over, captured in one
    CUDA graph and replayed (no host launch cost). Several thunks over different inputs that together
    exceed L2 give cold-cache figures, as a model's layers see them; one thunk repeated, hot ones."""
    def run(times: int) -> None:
        for _ in range(times):
            for call in calls:
                call()

    graph = capture_graph(lambda: run(2), lambda: run(repeat))
    graph.replay()
    torch.cuda.synchronize()
    return bench_ms(graph.replay, warmup_ms=10, rep_ms=50) * 1e3 / (repeat * len(calls))


def python_launch_us(fn: Callable[[], object], calls: int = 1000) -> float:
    """Microseconds per call of `fn` launched back to back from Python (host-side cost when the GPU keeps up)."""
    import time

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6
