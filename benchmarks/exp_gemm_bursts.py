r"""Experiment (prepared in session 50, not yet run): rooftop's GEMM against cuBLAS in alternating bursts, on the H200.

The bf16 GEMMs run at the card's 700 W cap (NOTES item 339: with the idle gaps between kernels removed the SM clock
fell ~4.5%), and the results harness times each provider in turn (do_bench, then a 50 ms graph replay), so a
provider's figure depends on the power state the one before left. The M = 512 ratios to cuBLAS moved between
0.90 and 1.00x from run to run (matmul results notes, session 41). Here, per case, both providers' chains (graph
replay over the harness's input copies) are timed in alternating bursts, A B B A ..., ROUNDS times each, and the
medians compared, beside the harness's own sequential reading of the same graphs; --seconds also replays each chain
back to back that long under nvidia-smi (exp_gemm_pdl.clocks_while): the sustained, power-bound figure.
Predicted: the alternating medians' ratios spread less than the sequential ones between runs; which M = 512 shapes
are below issue 4's 0.95x is what they say.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemm_bursts.py OUT [--m 512] [--rounds 8] [--seconds 0]
Writes OUT/exp-gemm-bursts.json; prints a table last.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from exp_gemm_pdl import clocks_while
from rooftop import registry
from rooftop.bench import providers
from rooftop.bench.sweep import input_sets
from rooftop.bench.timing import bench_ms, capture_graph, graph_replay_us


def burst_us(graph, calls: int) -> float:
    """GPU microseconds a call of one replay of `graph` (`calls` calls), by CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--m", default="512", help="comma-separated M of the matmul cases")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0)
    args = parser.parse_args()
    spec = registry.get("matmul")
    rows = []
    for shape in (s for s in spec.cases if str(s[0]) in args.m.split(",")):
        first = spec.make_inputs(tuple(shape), torch.bfloat16, "cuda")
        sets = input_sets(spec, shape, torch.bfloat16, first)
        repeat = max(1, 64 // len(sets))
        fns = {"rooftop": spec.run, "cublas": providers.make(spec, "cublas")}
        row = dict(shape=list(shape), sequential={}, bursts={name: [] for name in fns}, sustained={})
        graphs = {}
        for name, fn in fns.items():
            fn(*first)  # tunes, compiles
            calls = [lambda s=s, fn=fn: fn(*s) for s in sets]
            row["sequential"][name] = graph_replay_us(calls, repeat=repeat)
            graphs[name] = capture_graph(lambda calls=calls: [c() for c in calls],
                                         lambda calls=calls: [c() for _ in range(repeat) for c in calls])
            bench_ms(graphs[name].replay, warmup_ms=10, rep_ms=10)  # warm
        order = list(fns)
        for _ in range(args.rounds):
            for name in order:
                row["bursts"][name].append(burst_us(graphs[name], repeat * len(sets)))
            order.reverse()  # A B, B A, ..: each provider as often after the other as before it
        if args.seconds:
            for name, fn in fns.items():
                row["sustained"][name] = clocks_while([lambda s=s, fn=fn: fn(*s) for s in sets], repeat, args.seconds)
        rows.append(row)
        print(line(row), flush=True)
        del first, sets, graphs
        torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "exp-gemm-bursts.json").write_text(json.dumps(rows, indent=1))
    print("\nshape             x cuBLAS: sequential / alternating medians (us rooftop, cuBLAS) / sustained")
    for row in rows:
        print(line(row))


def line(row: dict) -> str:
    """A case's line: rooftop's speed-up over cuBLAS by the harness's sequential graph replays, by the alternating
    bursts' medians, and sustained where measured (with the SM clocks)."""
    seq = row["sequential"]["cublas"] / row["sequential"]["rooftop"]
    ours, theirs = (statistics.median(row["bursts"][name]) for name in ("rooftop", "cublas"))
    text = (f"{'x'.join(map(str, row['shape'])):16s}  {seq:.3f} / {theirs / ours:.3f} ({ours:.1f}, {theirs:.1f} us; "
            f"bursts {min(row['bursts']['rooftop']):.1f}-{max(row['bursts']['rooftop']):.1f} / "
            f"{min(row['bursts']['cublas']):.1f}-{max(row['bursts']['cublas']):.1f})")
    if row["sustained"]:
        a, b = row["sustained"]["rooftop"], row["sustained"]["cublas"]
        text += f" / {b['us'] / a['us']:.3f} ({a['sm_mhz']:.0f} / {b['sm_mhz']:.0f} MHz)"
    return text


if __name__ == "__main__":
    main()
