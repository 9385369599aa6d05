"""Probe (session 3, 2026-11-29): (1) is a slow small case host-bound? Time it with do_bench (one launch
from Python per call) and as CUDA-graph replay (no host): a large gap means the Python path, not the
kernel, sets the time. (2) layer_norm's and rms_norm's looped launch parameters (programs per SM).
Usage: PYTHONPATH=src python benchmarks/probe_host_and_layer_norm.py OUT.json
"""
from __future__ import annotations

import json
import sys

import torch

import rooftop
from rooftop.bench.timing import bench_ms, graph_replay_us
from rooftop.ops import layer_norm as ln_mod, rms_norm as rms_mod


def host_vs_graph(rows: list) -> None:
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    qw = rooftop.quantize_weight(w, bits=4, group_size=128)
    x1 = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    x16 = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 32, 512, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 8, 512, 128, device="cuda", dtype=torch.bfloat16)
    cos = torch.randn(512, 128, device="cuda", dtype=torch.bfloat16)
    cases = {"matmul 2048^3": lambda: rooftop.matmul(a, b), "torch.matmul 2048^3": lambda: a @ b,
             "quant_matmul int4 1x4096x4096": lambda: rooftop.quant_matmul(x1, qw),
             "quant_matmul int4 16x4096x4096": lambda: rooftop.quant_matmul(x16, qw),
             "F.linear bf16 1x4096x4096": lambda: torch.nn.functional.linear(x1, w),
             "apply_rope 1x32x512x128": lambda: rooftop.apply_rope(q, k, cos, cos)}
    for name, fn in cases.items():
        fn()
        row = {"case": name, "do_bench_us": bench_ms(fn) * 1e3, "graph_us": graph_replay_us([fn])}
        rows.append(row)
        print(row, flush=True)


def programs_per_sm(rows: list) -> None:
    for N in (8192, 65536, 262144):
        M = 2**27 // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        res = torch.randn_like(x)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        cases = {"layer_norm": (ln_mod, 2, lambda: rooftop.layer_norm(x, w, b)),
                 "add_layer_norm": (ln_mod, 4, lambda: rooftop.layer_norm(x, w, b, residual=res)),
                 "rms_norm": (rms_mod, 2, lambda: rooftop.rms_norm(x, w)),
                 "add_rms_norm_fp8": (rms_mod, 4, lambda: rooftop.rms_norm(x, w, residual=res, quant="fp8"))}
        for op, (mod, tensors, fn) in cases.items():
            saved = (mod.PROGRAMS_PER_SM, mod.ONCHIP_MAX)
            variants = [("looped", pps) for pps in (1, 2, 3, 4)] + ([("onchip", None)] if N <= 32768 else [])
            for path, pps in variants:
                if path == "looped":
                    mod.PROGRAMS_PER_SM, mod.ONCHIP_MAX = pps, min(saved[1], N - 1)
                try:
                    ms = bench_ms(fn)
                except Exception as e:
                    print("skip", op, N, path, pps, type(e).__name__)
                    continue
                finally:
                    mod.PROGRAMS_PER_SM, mod.ONCHIP_MAX = saved
                row = {"op": op, "N": N, "path": path, "pps": pps, "GBps": tensors * M * N * 2 / ms / 1e6}
                rows.append(row)
                print(row, flush=True)
        del x, res
        torch.cuda.empty_cache()


if __name__ == "__main__":
    out = []
    host_vs_graph(out)
    programs_per_sm(out)
    with open(sys.argv[1] if len(sys.argv) > 1 else "probe.json", "w") as f:
        json.dump(out, f, indent=1)
