"""Launch-parameter search for the row kernels (softmax, rms_norm, add + RMSNorm, layer_norm) on the
present GPU.

Times each candidate configuration of the on-chip path (rows per program, warps) and of the looped
path (tile, warps, programs per SM) at M * N = 2^27 bf16 on the GPU alone (graph replay, L2 flushed:
rooftop.ops._autotune.time_ms), and at decode sizes add + RMSNorm's on-chip warps against torch.compile
(graph replay). Prints the best per width; the
chosen defaults live in the op files (see JOURNAL.md).
Usage: PYTHONPATH=src python benchmarks/tune_rowops.py [out.json] [--widths 16384,32768] [--ops a,b]
[--paths onchip,looped] [--no-decode]
"""
from __future__ import annotations

import argparse
import json

import torch

import rooftop
from rooftop import registry
from rooftop.bench import providers
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _autotune, _support, layer_norm as ln_mod, rms_norm as rms_mod, softmax as softmax_mod

M_TIMES_N = 2**27
DECODE_ELEMS_PER_THREAD = (4, 8, 16, 32)
DECODE_ROUNDS = 5


def gbps(ms: float, tensors: int, n_elems: int) -> float:
    return tensors * n_elems * 2 / (ms * 1e-3) / 1e9


def onchip_candidates(N: int):
    for tile in (2048, 4096, 8192, 16384, 32768, 65536):
        if tile < N or (tile > N and tile > 16384):
            continue
        block_m = tile // N
        for ept in (8, 16, 32, 64):
            warps = tile // (32 * ept)
            if 1 <= warps <= 32:
                yield block_m, warps


def run_onchip(mod, fn, N, tensors):
    out = []
    real, onchip_max = mod.onchip_config, mod.ONCHIP_MAX
    mod.ONCHIP_MAX = max(onchip_max, N)
    for block_m, warps in onchip_candidates(N):
        mod.onchip_config = lambda M, n, *a, bm=block_m, w=warps: (bm, n if n & (n - 1) == 0 else 1 << n.bit_length(), w)
        try:
            ms = _autotune.time_ms(fn)
            out.append({"path": "onchip", "N": N, "block_m": block_m, "warps": warps, "GBps": gbps(ms, tensors, M_TIMES_N)})
        except Exception as e:  # out of resources
            print("skip", N, block_m, warps, type(e).__name__)
    mod.onchip_config, mod.ONCHIP_MAX = real, onchip_max
    return out


def run_looped(mod, fn, N, tensors):
    out = []
    saved = (mod.ONCHIP_MAX, mod.looped_config, mod.PROGRAMS_PER_SM)
    mod.ONCHIP_MAX = min(mod.ONCHIP_MAX, N - 1)
    for tile, warps in ((2048, 4), (4096, 4), (4096, 8), (8192, 8), (8192, 16), (16384, 16), (16384, 32)):
        for pps in (1, 2, 3, 4):
            mod.looped_config = lambda n, *_, t=tile, w=warps: (t, w)
            mod.PROGRAMS_PER_SM = pps
            ms = _autotune.time_ms(fn)
            out.append({"path": "looped", "N": N, "tile": tile, "warps": warps, "pps": pps,
                        "GBps": gbps(ms, tensors, M_TIMES_N)})
    mod.ONCHIP_MAX, mod.looped_config, mod.PROGRAMS_PER_SM = saved
    return out


def main(out_path: str, widths, decode: bool, ops: set, paths: set) -> None:
    default_ept = rms_mod.ONCHIP_ELEMS_PER_THREAD
    results = {"device": torch.cuda.get_device_name(), "decode": [], **{op: [] for op in ops}}
    for N in widths:
        M = M_TIMES_N // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        res = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        cases = {"softmax": (softmax_mod, lambda: rooftop.softmax(x), 2),
                 "add_rms_norm": (rms_mod, lambda: rooftop.rms_norm(x, w, 1e-6, residual=res), 4),
                 "rms_norm": (rms_mod, lambda: rooftop.rms_norm(x, w, 1e-6), 2),
                 "layer_norm": (ln_mod, lambda: rooftop.layer_norm(x, w, b), 2),
                 "add_layer_norm": (ln_mod, lambda: rooftop.layer_norm(x, w, b, residual=res), 4)}
        for op in ops:
            mod, fn, tensors = cases[op]
            if N <= 65536 and "onchip" in paths:
                results[op] += run_onchip(mod, fn, N, tensors)
            if N >= 16384 and "looped" in paths:
                results[op] += run_looped(mod, fn, N, tensors)
        x = res = None  # freed before the next width's inputs
        torch.cuda.empty_cache()
        for op in ops:
            best = max((r for r in results[op] if r["N"] == N), key=lambda r: r["GBps"], default=None)
            print(op, N, best, flush=True)

    # decode sizes, add + RMSNorm: the on-chip kernel's values a thread (hence warps) against torch.compile, each
    # under graph replay (hot L2, as the results' decode table), in interleaved rounds (the figures are ~2 us)
    spec = registry.get("add_rms_norm")
    for M in ((1, 8, 64) if decode else ()):
        for N in (4096, 8192):
            inputs = spec.make_inputs((M, N), torch.bfloat16, "cuda")
            compiled = providers.make(spec, "compile")
            runs = {"compile": [], **{ept: [] for ept in DECODE_ELEMS_PER_THREAD}}
            for _ in range(DECODE_ROUNDS):
                runs["compile"].append(graph_replay_us([lambda: compiled(*inputs)]))
                for ept in DECODE_ELEMS_PER_THREAD:
                    rms_mod.ONCHIP_ELEMS_PER_THREAD = ept
                    _support.clear_plans()
                    runs[ept].append(graph_replay_us([lambda: rooftop.rms_norm(inputs[0], inputs[2], 1e-6,
                                                                                residual=inputs[1])]))
            rms_mod.ONCHIP_ELEMS_PER_THREAD = default_ept
            _support.clear_plans()
            row = {"M": M, "N": N, **{str(k): sorted(v)[len(v) // 2] for k, v in runs.items()}}
            results["decode"].append(row)
            print("decode graph us (median), compile / values a thread:", row, flush=True)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="tune.json")
    parser.add_argument("--widths", default="512,1024,2048,4096,8192,16384,32768,65536,131072,262144")
    parser.add_argument("--ops", default="softmax,add_rms_norm,rms_norm",
                        help="of softmax, add_rms_norm, rms_norm, layer_norm, add_layer_norm")
    parser.add_argument("--paths", default="onchip,looped")
    parser.add_argument("--no-decode", action="store_true")
    args = parser.parse_args()
    main(args.out, [int(w) for w in args.widths.split(",") if w], not args.no_decode, args.ops.split(","),
         set(args.paths.split(",")))
