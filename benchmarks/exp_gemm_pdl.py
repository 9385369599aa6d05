r"""Experiment (session 50): the GEMMs' kernels launched as programmatic dependents (PDL), on the H200, bf16.

Until session 50 only quant_matmul's Triton paths (gemv, mma, dot: PDL_PATHS) and the row ops' decode kernels were
launched so. matmul's kernels (Triton grouped / TMA, the Gluon warp-specialised one: matmul.PDL_KERNELS) and
quant_matmul's Gluon kernels (batch 17 up: "gluon", "gluon_rs") now wait for the kernel ahead (griddepcontrol.wait)
after setting up their shared memory and barriers, and let the next launch go. In a chain of calls (the results
harness's graph replay, a model's layers) the next kernel's programs then take each SM as this kernel's program there
ends, its launch and ramp under this one's tail.
Per case of the results registry (matmul at the given M, quant_matmul_int4 at the given batches): the library's call
tuned once (PDL on), then timed by graph replay over input copies that exceed L2 (the results harness's graph_ms) with
PDL on, off, on again (plans cleared at each switch; the tuner's choice kept), cuBLAS in the same run; each switch's
output checked bit for bit against the first. Predicted: ~0.5-1.5 us a call off (the GEMVs' 0.3-1.3, journal item 168):
3-5% at matmul M = 512 (30-40 us), 3-8% at W4A16 batch 64 (15-30 us).
Seen (H200, session 50, logs/h200-2026-12-04-s50/call-d: off / on four times in turn, medians; journal items 337, 339):
W4A16 batch 64 15.4 / 25.1 / 28.1 -> 14.3 / 23.9 / 27.3 us at 4096^2 / 14336 x 4096 / 4096 x 14336, level at 28672 x
8192; batch 256 25.6 -> 24.5 at 4096^2, level elsewhere: kept. matmul at M = 512 level or 1-4% slower with PDL
(calls c, d): not kept. --clocks (call g) told why: the GEMMs draw the 700 W cap either way and without the gaps
between kernels the SM clock drops ~4.5% (512 x 28672 x 4096: 1310 against 1370 MHz, 204.5 against 199.1 us a call).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemm_pdl.py OUT [--matmul-m 512] [--quant-m 64,256]
       [--order on,off,on] [--shapes 28672x4096] [--clocks SECONDS]
Writes OUT/exp-gemm-pdl.json; prints a table last.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import torch

from rooftop import registry
from rooftop.bench import providers
from rooftop.bench.sweep import input_sets
from rooftop.bench.timing import capture_graph, graph_replay_us
from rooftop.ops import _autotune, matmul as mm, quant_matmul as qm

GLUON_QUANT = frozenset({"gluon", "gluon_rs"})


def switch(on: bool) -> None:
    """PDL on or off for the kernels this session added to it (the quant GEMVs' as they are); plans cleared."""
    mm.PDL_KERNELS = frozenset({"grouped", "tma", "gluon"}) if on else frozenset()
    qm.PDL_PATHS = (qm.PDL_PATHS | GLUON_QUANT) if on else (qm.PDL_PATHS - GLUON_QUANT)
    mm._plans.clear()
    qm._plans.clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--matmul-m", default="512")
    parser.add_argument("--quant-m", default="64,256")
    parser.add_argument("--order", default="on,off,on", help="the switch's settings in turn, e.g. off,on,off,on")
    parser.add_argument("--shapes", default="", help="only these N x K, e.g. 28672x4096,4096x4096")
    parser.add_argument("--clocks", type=float, default=0, help="seconds of the chain replayed after each timing while "
                        "nvidia-smi samples the SM clock and the power draw")
    args = parser.parse_args()
    order = [part == "on" for part in args.order.split(",")]
    chosen = []
    real_choose = _autotune.choose
    _autotune.choose = lambda op, key, configs, *a, **kw: chosen.append(real_choose(op, key, configs, *a, **kw)) \
        or chosen[-1]
    cases = [("matmul", s) for s in registry.get("matmul").cases if str(s[0]) in args.matmul_m.split(",")]
    cases += [("quant_matmul_int4", s) for s in registry.get("quant_matmul_int4").cases
              if str(s[0]) in args.quant_m.split(",")]
    if args.shapes:
        cases = [(op, s) for op, s in cases if "x".join(map(str, s[1:])) in args.shapes.split(",")]
    rows = []
    for op, shape in cases:
        spec = registry.get(op)
        first = spec.make_inputs(tuple(shape), torch.bfloat16, "cuda")
        sets = input_sets(spec, shape, torch.bfloat16, first)
        repeat = max(1, 64 // len(sets))
        switch(True)
        chosen.clear()
        base = spec.run(*first).clone()  # tunes
        config = chosen[-1] if chosen else None
        row = dict(op=op, shape=list(shape), config=config, on=[], off=[], same=True, clocks=[])
        for on in order:
            switch(on)
            row["same"] &= torch.equal(spec.run(*first), base)
            calls = [lambda s=s: spec.run(*s) for s in sets]
            row["on" if on else "off"].append(graph_replay_us(calls, repeat=repeat))
            if args.clocks:
                row["clocks"].append(dict(pdl=on, **clocks_while(calls, repeat, args.clocks)))
                print(f"  PDL {on:d}: {row['clocks'][-1]}", flush=True)
        cublas = providers.make(spec, "cublas")
        row["cublas"] = graph_replay_us([lambda s=s: cublas(*s) for s in sets], repeat=repeat)
        rows.append(row)
        print(line(row), flush=True)
        del first, sets
        torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "exp-gemm-pdl.json").write_text(json.dumps(rows, indent=1))
    print(f"\nop                 shape            kernel    PDL on ({args.order}) / off, us       cuBLAS  x cuBLAS "
          "(medians) on / off  same bits")
    for r in rows:
        print(line(r))


def clocks_while(calls, repeat: int, seconds: float) -> dict:
    """The mean SM clock (MHz) and power draw (W) nvidia-smi reads every 100 ms while a graph of `calls`, `repeat`
    times over, is replayed back to back for `seconds`, and the GPU us a call meanwhile."""
    graph = capture_graph(lambda: [c() for c in calls], lambda: [c() for _ in range(repeat) for c in calls])
    graph.replay()
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=subprocess.PIPE, text=True)
    start, replays = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        graph.replay()
        torch.cuda.synchronize()
        replays += 1
    elapsed = time.perf_counter() - start
    smi.terminate()
    samples = [row.split(",") for row in smi.communicate()[0].splitlines()]
    samples = [(float(a), float(b)) for a, b in (r for r in samples if len(r) == 2)
               if a.strip().replace(".", "").isdigit() and b.strip().replace(".", "").isdigit()]
    mean = lambda i: statistics.mean(s[i] for s in samples) if samples else float("nan")  # noqa: E731
    return dict(sm_mhz=mean(0), watts=mean(1), samples=len(samples),
                us=elapsed * 1e6 / (replays * repeat * len(calls)))


def line(r: dict) -> str:
    """A case's table line: each timing with the switch on, then off, cuBLAS, the medians' ratios to it."""
    kind = (r["config"] or {}).get("KERNEL") or (r["config"] or {}).get("path")
    on, off = statistics.median(r["on"]), statistics.median(r["off"])
    return (f"{r['op']:18s} {'x'.join(map(str, r['shape'])):16s} {str(kind):9s} "
            f"{' '.join(f'{t:6.1f}' for t in r['on'])} / {' '.join(f'{t:6.1f}' for t in r['off'])}  "
            f"{r['cublas']:7.1f}  {r['cublas'] / on:.3f} / {r['cublas'] / off:.3f}  {r['same']}")


if __name__ == "__main__":
    main()
