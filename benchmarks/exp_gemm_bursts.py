r"""Experiment (prepared in session 50, run in session 51): rooftop's GEMM against cuBLAS in alternating bursts, on the
H200.

The bf16 GEMMs run at the card's 700 W cap (journal item 339: with the idle gaps between kernels removed the SM clock
fell ~4.5%), and the results harness times each provider in turn (do_bench, then a 50 ms graph replay), so a
provider's figure depends on the power state the one before left. The M = 512 ratios to cuBLAS moved between
0.90 and 1.00x from run to run (matmul results notes, session 41). Here, per case, both providers' chains (graph
replay over the harness's input copies) are timed in alternating bursts, A B B A ..., ROUNDS times each, and the
medians compared, beside the harness's own sequential reading of the same graphs; --seconds also replays each chain
back to back that long under nvidia-smi (exp_gemm_pdl.clocks_while): the sustained, power-bound figure.
Predicted: the alternating medians' ratios spread less than the sequential ones between runs; which M = 512 shapes
are below issue 4's 0.95x is what they say.
Session 51 (call a, twice): the alternating medians agreed within 0.013 between runs where the sequential ratios
moved by up to 0.11; 512 x 10240 x 8192 0.913x both times, 512 x 28672 x 4096 0.954 / 0.957, the others 0.97-0.99.
The bursts are now the harness's own (timing.alternating_graph_us; sweep.measure times every provider so).
--candidates adds every candidate of the tuner's list for the case, forced (`forcing`), to the bursts: does the
tuner (one call, L2 flushed by zeroing) pick what runs fastest over input copies? Call c: it picks within 1-2% of
the fastest (512 x 10240 x 8192: tuned 132.6 us, the 128 x 160 Gluon tiles 130.3; 512 x 28672 x 4096: 183.0, the
5-stage 128 x 128 Gluon tiles 180.4). Among 20 chains of unlike speeds cuBLAS ran 113 / 159 us there (131 / 183
against rooftop alone): a chain after slow ones starts at a higher clock, so only the candidates' ranking holds.
--op matmul_bias_silu / matmul_residual (session 52): issue 4's fused epilogues against "cuBLAS followed by the eager
epilogue" (the op's eager provider: torch.matmul, then the bias add and SiLU or the residual add as torch ops), beside
cuBLAS alone on the same a and b (`cublas_alone`, torch.matmul with no epilogue: at parity with it a fused kernel
gains eager / cublas_alone over the eager chain, ~1 + 3 F / (B K) for the residual's 6 bytes an output element, F
the matmul rate and B the copy bandwidth: 1.12x at K = 4096, 1.06x at 8192) and the registry's cuBLAS peer (addmm
with its fused bias, then SiLU; addmm with beta = 1).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemm_bursts.py OUT [--m 512] [--shapes NxK,..] [--rounds 8]
       [--seconds 0] [--candidates] [--op matmul] [--cases MxNxK,..] [--providers cublas,eager,cublas_alone]
Writes OUT/exp-gemm-bursts-<op>.json (after each case); prints a table last.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from exp_gemm_pdl import clocks_while
from rooftop import registry
from rooftop.ops import _autotune, _support
from rooftop.bench import providers
from rooftop.bench.sweep import input_sets
from rooftop.bench.timing import alternating_graph_us, chain_graph, graph_replay_us


class forcing:
    """rooftop.matmul with the tuner's choice replaced by `config` (None: the tuner's own) while inside; the
    recorded calls are forgotten when the forced choice changes (a replay would keep the last one's kernels)."""
    current = ("unset",)
    choose, is_settled = _autotune.choose, _autotune.is_settled
    seen: list = []  # the candidate lists the tuner was asked to choose from

    def __init__(self, config):
        self.config = config

    def __enter__(self):
        if forcing.current != self.config:
            _support.clear_plans()
            forcing.current = self.config
        if self.config is not None:
            _autotune.choose = lambda op, key, configs, run, **kw: self.config
            _autotune.is_settled = lambda *args, **kw: True

    def __exit__(self, *exc):
        _autotune.choose, _autotune.is_settled = forcing.choose, forcing.is_settled


def recorded_choose(op, key, configs, run, **kw):
    """The tuner's choose, remembering the candidates it was given (`forcing.seen`)."""
    forcing.seen.append(list(configs))
    return forcing.choose(op, key, configs, run, **kw)


def candidate_fns(spec, first: tuple) -> dict:
    """name: fn for the tuned call and for each of the tuner's candidates for `first`'s case, forced."""
    def forced(config):
        def fn(*args):
            with forcing(config):
                return spec.run(*args)
        return fn

    forcing.seen.clear()
    _autotune.choose = recorded_choose
    try:
        with forcing(None):
            spec.run(*first)  # tunes
    finally:
        _autotune.choose = forcing.choose
    fns = {"rooftop": forced(None)}
    for i, config in enumerate(forcing.seen[-1]):
        fns[f"c{i}:" + ",".join(f"{k}={v}" for k, v in config.items())] = forced(config)
    return fns


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--m", default="512", help="comma-separated M of the matmul cases")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--shapes", default="", help="comma-separated NxK of the cases (default: every one)")
    parser.add_argument("--candidates", action="store_true")
    parser.add_argument("--op", default="matmul", help="matmul, matmul_bias_silu or matmul_residual")
    parser.add_argument("--cases", default="", help="comma-separated MxNxK (instead of --m / --shapes)")
    parser.add_argument("--providers", default="cublas", help="comma-separated: the op's providers, cublas_alone")
    args = parser.parse_args()
    spec = registry.get(args.op)
    rows = []
    if args.cases:
        cases = [tuple(map(int, c.split("x"))) for c in args.cases.split(",")]
    else:
        cases = [tuple(s) for s in spec.cases if str(s[0]) in args.m.split(",")
                 and (not args.shapes or f"{s[1]}x{s[2]}" in args.shapes.split(","))]
    for shape in cases:
        first = spec.make_inputs(shape, torch.bfloat16, "cuda")
        sets = input_sets(spec, shape, torch.bfloat16, first)
        repeat = max(1, 64 // len(sets))
        fns = candidate_fns(spec, first) if args.candidates else {"rooftop": spec.run}
        for name in args.providers.split(","):
            fns[name] = (lambda a, b, *epilogue: torch.matmul(a, b)) if name == "cublas_alone" else \
                providers.make(spec, name)
        chains = {name: [lambda s=s, fn=fn: fn(*s) for s in sets] for name, fn in fns.items()}
        row = dict(shape=list(shape), sequential={}, bursts={}, sustained={})
        for name, fn in fns.items():
            fn(*first)  # tunes, compiles
            row["sequential"][name] = graph_replay_us(chains[name], repeat=repeat)
        row["bursts"] = alternating_graph_us({name: (chain_graph(chain, repeat), repeat * len(chain))
                                              for name, chain in chains.items()}, rounds=args.rounds)
        if args.seconds:
            for name, fn in fns.items():
                row["sustained"][name] = clocks_while([lambda s=s, fn=fn: fn(*s) for s in sets], repeat, args.seconds)
        rows.append(row)
        print(line(row), flush=True)
        if args.candidates or len(fns) > 2:
            print(candidate_lines(row), flush=True)
        del first, sets, chains
        torch.cuda.empty_cache()
        Path(args.out).mkdir(parents=True, exist_ok=True)  # after each case: a run cut by its time limit keeps them
        (Path(args.out) / f"exp-gemm-bursts-{args.op}.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{args.op}\nshape             x cuBLAS: sequential / alternating medians (us rooftop, cuBLAS) / sustained")
    for row in rows:
        print(line(row))
    for row in rows if args.candidates or len(row["bursts"]) > 2 else ():
        print(candidate_lines(row))


def line(row: dict) -> str:
    """A case's line: rooftop's speed-up over cuBLAS by the harness's sequential graph replays, by the alternating
    bursts' medians, and sustained where measured (with the SM clocks)."""
    seq = row["sequential"]["cublas"] / row["sequential"]["rooftop"]
    ours, theirs = row["bursts"]["rooftop"], row["bursts"]["cublas"]
    text = f"{'x'.join(map(str, row['shape'])):16s}  {seq:.3f} / {theirs / ours:.3f} ({ours:.1f}, {theirs:.1f} us)"
    if row["sustained"]:
        a, b = row["sustained"]["rooftop"], row["sustained"]["cublas"]
        text += f" / {b['us'] / a['us']:.3f} ({a['sm_mhz']:.0f} / {b['sm_mhz']:.0f} MHz)"
    return text


def candidate_lines(row: dict) -> str:
    """A line per provider of the case: its bursts' median, cuBLAS's over it and its over rooftop's."""
    theirs, ours = row["bursts"]["cublas"], row["bursts"]["rooftop"]
    return "x".join(map(str, row["shape"])) + "\n" + "\n".join(
        f"  {us:7.1f} us {theirs / us:.3f}x cuBLAS, rooftop {us / ours:.3f}x it  {name}"
        for name, us in row["bursts"].items())


if __name__ == "__main__":
    main()
