"""The one timing helper: median of CUDA-event timings (triton.testing.do_bench flushes L2 between runs)."""
from __future__ import annotations

import statistics
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


def synchronises_host(fn: Callable[[], object]) -> bool:
    """Whether `fn()` (already warmed up) waits for the GPU from the host by a torch operation (nonzero, .item(), a
    copy to the host: what torch's sync debug mode flags): no CUDA graph can hold it, and a capture that fails on it
    leaves torch's CUDA generator mid-capture, so that every later torch.randn in the process raises ("Offset
    increment outside graph capture"). Any other error of fn's is raised."""
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn()
    except RuntimeError as err:
        if "synchronizing CUDA operation" not in str(err):
            raise
        return True
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    return False


def chain_graph(calls: Sequence[Callable[[], object]], repeat: int) -> "torch.cuda.CUDAGraph":
    """The thunks `calls`, `repeat` times over, in one CUDA graph (warmed up by two rounds first)."""
    def run(times: int) -> None:
        for _ in range(times):
            for call in calls:
                call()

    return capture_graph(lambda: run(2), lambda: run(repeat))


def graph_replay_us(calls: Sequence[Callable[[], object]], repeat: int = 100) -> float:
    """Microseconds per call on the GPU alone: the thunks `calls`, `repeat` times over, captured in one
    CUDA graph and replayed (no host launch cost). Several thunks over different inputs that together
    exceed L2 give cold-cache figures, as a model's layers see them; one thunk repeated, hot ones."""
    graph = chain_graph(calls, repeat)
    graph.replay()
    torch.cuda.synchronize()
    return bench_ms(graph.replay, warmup_ms=10, rep_ms=50) * 1e3 / (repeat * len(calls))


def alternating_ms(calls: dict[str, Callable[[], object]], rounds: int = 8) -> dict[str, list[float]]:
    """Milliseconds of each named call (CUDA events), the calls timed in turn and the order reversed every round (A B
    C, C B A, ..): each one's `rounds` times. Why: compute-bound kernels run at the card's power cap (H200: 700 W),
    and a call timed right after another inherits the clock that one left; timed one provider after the other, the
    M = 512 GEMMs' ratios to cuBLAS moved by up to 0.11 between runs, timed this way by 0.013 (journal item 341)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for _ in range(rounds):
        for name in order:
            start.record()
            calls[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
        order.reverse()
    return times


def alternating_graph_us(graphs: dict[str, tuple["torch.cuda.CUDAGraph", int]],
                         rounds: int = 8) -> dict[str, float]:
    """Microseconds per call of each named (graph, calls it replays) on the GPU alone (a chain_graph over
    input copies, as graph_replay_us times one): the graphs replayed in alternating bursts (alternating_ms), each
    one's median burst."""
    for graph, _ in graphs.values():
        graph.replay()
    torch.cuda.synchronize()
    bursts = alternating_ms({name: graph.replay for name, (graph, _) in graphs.items()}, rounds)
    return {name: statistics.median(ms) * 1e3 / graphs[name][1] for name, ms in bursts.items()}


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
