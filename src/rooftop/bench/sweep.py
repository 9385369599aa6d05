"""Sweeps: every provider of an op over its sizes, with the same inputs, in one process."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from rooftop import registry
from rooftop.bench import providers as prov
from rooftop.bench.timing import (alternating_graph_us, bench_ms, chain_graph, graph_replay_us, python_launch_us,
                                  synchronises_host)

DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
          "fp32": torch.float32, "float32": torch.float32}


def parse_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return DTYPES[name]


def rel_err(out, ref) -> float:
    out = out[0] if isinstance(out, (tuple, list)) else out
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    ref = ref.double()
    return float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))


GRAPH_BELOW_MS = 0.3  # calls shorter than this are also timed on the GPU alone (host launch cost left out)
GRAPH_INPUT_SETS = 64  # at most this many input copies to rotate through so that L2 stays cold


def input_sets(spec: registry.OpSpec, shape: Sequence[int], dtype: torch.dtype, first: tuple) -> list[tuple]:
    """`first` plus fresh input copies until together they move twice the L2 by the cost model."""
    l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    count = min(GRAPH_INPUT_SETS, max(1, -(-2 * l2 // max(1, spec.cost(tuple(shape), dtype).bytes))))
    return [first] + [spec.make_inputs(tuple(shape), dtype, "cuda") for _ in range(count - 1)]


def measure(spec: registry.OpSpec, shape: Sequence[int], dtype: torch.dtype, providers: Sequence[str],
            ceilings, check: bool = True, say: Callable[[str], None] = print) -> list[dict]:
    """Time each provider on one shape; rows in the DESIGN.md results format. A provider that cannot
    run is left out, and the reason said. `ms` is do_bench's (launched from Python, L2 flushed); a
    call under GRAPH_BELOW_MS also gets `graph_ms`: its GPU time alone, by graph replay over input
    copies that exceed L2 (where the host, not the kernel, may set `ms`), the providers' graphs
    replayed in alternating bursts (timing.alternating_graph_us)."""
    inputs = spec.make_inputs(tuple(shape), dtype, "cuda")
    ref = spec.reference(*inputs) if check else None
    cost = spec.cost(tuple(shape), dtype)
    rows, sets, graphs = [], None, {}
    for name in providers:
        try:
            fn = prov.make(spec, name)
            if fn is None:
                say(f"{spec.name} {list(shape)}: {name} is not importable, left out")
                continue
            out = fn(*inputs)  # compiles, warms up
            err = rel_err(out, ref) if check else None
            del out
            ms = bench_ms(lambda: fn(*inputs))
            if ms < GRAPH_BELOW_MS:
                if synchronises_host(lambda: fn(*inputs)):  # a loop over the experts hit: it keeps ms alone
                    say(f"{spec.name} {list(shape)}: {name} not capturable in a CUDA graph: it synchronises the host")
                else:
                    sets = sets or input_sets(spec, shape, dtype, inputs)
                    repeat = max(1, 64 // len(sets))
                    try:
                        graphs[name] = (chain_graph([lambda s=s: fn(*s) for s in sets], repeat), repeat * len(sets))
                    except Exception as e:  # a sync the debug mode does not flag, or another limit: it keeps ms
                        say(f"{spec.name} {list(shape)}: {name} not capturable in a CUDA graph: {type(e).__name__}")
                        torch.cuda.synchronize()
        except Exception as e:  # a provider that fails at one size (limits, OOM) is reported, not fatal
            say(f"{spec.name} {list(shape)}: {name} failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            torch.cuda.empty_cache()
            continue
        seconds = ms * 1e-3
        rows.append({"op": spec.name, "dtype": str(dtype).replace("torch.", ""), "shape": list(shape),
                     "provider": name, "ms": ms, "GBps": cost.achieved_GBps(seconds),
                     "TFLOPs": cost.achieved_TFLOPs(seconds) if cost.bound(ceilings) == "compute" else None,
                     "roofline_pct": cost.roofline_pct(seconds, ceilings), "rel_err": err,
                     "flops": cost.flops, "bytes": cost.bytes})
    if graphs:
        graph_us = alternating_graph_us(graphs)
        for row in rows:
            if row["provider"] in graph_us:
                graph_ms = graph_us[row["provider"]] * 1e-3
                row.update(graph_ms=graph_ms, graph_roofline_pct=cost.roofline_pct(graph_ms * 1e-3, ceilings))
    del inputs, ref, sets, graphs
    torch.cuda.empty_cache()
    return rows


def run_sweep(op_names: Sequence[str], dtype: torch.dtype, ceilings, shapes=None, providers=None,
              check: bool = True, after_case: Optional[Callable[[list[dict]], None]] = None) -> list[dict]:
    """Measure every op over its cases (or `shapes`), providers side by side, with a progress bar;
    `after_case(rows so far)` after each case (a session writes them, so that a run cut short keeps them)."""
    from rich.progress import Progress

    specs = [registry.get(n) for n in op_names]
    work = [(s, tuple(shape)) for s in specs for shape in (shapes or s.cases)]
    rows: list[dict] = []
    with Progress() as progress:
        task = progress.add_task("measuring", total=len(work))
        for spec, shape in work:
            names = providers or prov.available(spec)
            progress.update(task, description=f"{spec.name} {'x'.join(map(str, shape))}")
            rows += measure(spec, shape, dtype, names, ceilings, check, say=progress.console.print)
            if after_case:
                after_case(rows)
            progress.advance(task)
    return rows


def decode_latency(op_name: str, shapes, dtype: torch.dtype, providers=("rooftop", "eager", "compile")) -> list[dict]:
    """Microseconds per call at decode sizes: under CUDA graph replay, and launched from Python."""
    spec = registry.get(op_name)
    out = []
    for shape in shapes:
        inputs = spec.make_inputs(tuple(shape), dtype, "cuda")
        for name in providers:
            fn = prov.make(spec, name)
            if fn is None:
                continue
            call = lambda: fn(*inputs)  # noqa: E731
            out.append({"op": op_name, "shape": list(shape), "provider": name,
                        "graph_us": graph_replay_us([call]), "python_us": python_launch_us(call)})
    return out


def speedups(rows: list[dict], over: str, timing: str = "ms") -> dict[tuple, float]:
    """rooftop's speed-up over provider `over` per (op, shape), by `timing` ("ms" or "graph_ms")."""
    base = {(r["op"], tuple(r["shape"])): r[timing] for r in rows if r["provider"] == over and r.get(timing)}
    return {(r["op"], tuple(r["shape"])): base[(r["op"], tuple(r["shape"]))] / r[timing]
            for r in rows if r["provider"] == "rooftop" and r.get(timing) and (r["op"], tuple(r["shape"])) in base}
