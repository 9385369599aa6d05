"""quant_matmul's host path by batch (journal item 229): microseconds a call back to back from Python with the Gluon
launches' descriptor cache on and off (_support.DESCRIPTOR_CACHE_ENABLED), the GPU time alone (graph replay), whether
the public call replays a recorded plan (`planned`), and a cProfile of the calls at one batch.
int4, groups of 128, N = K = 4096, bf16. A torch add of the same x from Python is the host's floor. With --fp8, W8A8
fp8_linear (quantize_rows, then matmul_fp8) in place of quant_matmul (session 59: 133 us a call from Python at M = 512
against 62-112 us on the GPU alone).
Usage: PYTHONPATH=src:benchmarks python benchmarks/probe_quant_host.py OUT [--batches 1,16,17,64,256] [--fp8]
[--nk 4096x4096] (prints a table last, writes OUT/quant-host.json)
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
from pathlib import Path

import torch

import rooftop
from rooftop.bench.timing import graph_replay_us, python_launch_us
from rooftop.ops import _support
from rooftop.ops import quant_matmul as qm


def profile(fn, calls: int = 200) -> str:
    """The 16 costliest functions (own time) of `calls` calls of fn."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(16)
    return "\n".join(line for line in text.getvalue().splitlines() if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--batches", default="1,16,17,64,256")
    parser.add_argument("--profile-batch", type=int, default=64)
    parser.add_argument("--fp8", action="store_true", help="W8A8 fp8_linear in place of int4 quant_matmul")
    parser.add_argument("--nk", default="4096x4096", help="the weight's N x K")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    N, K = map(int, args.nk.split("x"))
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K ** -0.5
    if args.fp8:
        codes, w_scale = rooftop.ops.matmul.quantize_fp8_weight(w)
    else:
        qw = rooftop.quantize_weight(w, 4, 128)
    rows = []
    for m in map(int, args.batches.split(",")):
        x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
        fn = (lambda: rooftop.fp8_linear(x, codes, w_scale)) if args.fp8 else (lambda: rooftop.quant_matmul(x, qw))
        fn()  # the first call tunes
        row = dict(M=m, add_us=python_launch_us(lambda: x.add(x), calls=200))
        for cache in (True, False):
            _support.DESCRIPTOR_CACHE_ENABLED = cache
            row[f"python_us_cache_{'on' if cache else 'off'}"] = python_launch_us(fn, calls=200)
        _support.DESCRIPTOR_CACHE_ENABLED = True
        if args.fp8:  # the full path (no recorded call replayed) beside the replays
            _support.PLANS_ENABLED = False
            row["python_us_no_plans"] = python_launch_us(fn, calls=200)
            _support.PLANS_ENABLED = True
        row["graph_us"] = graph_replay_us([fn], repeat=20)
        planned_op = rooftop.fp8_linear if args.fp8 else qm._quant_matmul
        row["replayed"] = bool(planned_op.plans)  # a recorded plan stands for some call
        row["path"] = next(iter(qm._plans.values())).args[0]["path"] if qm._plans else None
        planned_op.plans.clear()
        qm._plans.clear()
        rows.append(row)
        print(json.dumps(row), flush=True)
        if m == args.profile_batch:
            fn()
            fn()
            fn()
            text = profile(fn)
            (out / f"quant-host-profile-M{m}.txt").write_text(text)
            print(text[:4000], flush=True)
    (out / "quant-host.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{'fp8_linear' if args.fp8 else 'quant_matmul int4 g128'} {N} x {K}: us a call from Python (descriptor "
          "cache on / off), GPU (graph), add")
    for r in rows:
        print(f"M {r['M']:4d} {str(r['path']):8s} replayed {r['replayed']!s:5s} "
              f"python {r['python_us_cache_on']:6.1f} / {r['python_us_cache_off']:6.1f}"
              + (f" (no plans {r['python_us_no_plans']:6.1f})" if args.fp8 else "") + f"  graph {r['graph_us']:6.1f}  "
              f"add {r['add_us']:5.1f}")


if __name__ == "__main__":
    main()
