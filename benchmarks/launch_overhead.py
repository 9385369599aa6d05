"""Where the host time of one small call goes: cProfile of back-to-back small calls of each op named
on the command line (default: add_rms_norm). Usage: PYTHONPATH=src python benchmarks/launch_overhead.py
[add_rms_norm matmul quant_matmul apply_rope ...]"""
import cProfile
import pstats
import sys

import torch

import rooftop


def calls():
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, **bf16)
    res, w = torch.randn_like(x), torch.rand(4096, **bf16)
    a, b = torch.randn(256, 512, **bf16), torch.randn(512, 512, **bf16)
    qw = rooftop.quantize_weight(torch.randn(4096, 4096, **bf16), bits=4, group_size=128)
    q, k = torch.randn(1, 32, 16, 128, **bf16), torch.randn(1, 8, 16, 128, **bf16)
    cos = torch.randn(16, 128, **bf16)
    return {"add_rms_norm": lambda: rooftop.rms_norm(x, w, 1e-6, residual=res),
            "softmax": lambda: rooftop.softmax(x), "layer_norm": lambda: rooftop.layer_norm(x, w, w),
            "matmul": lambda: rooftop.matmul(a, b), "quant_matmul": lambda: rooftop.quant_matmul(x, qw),
            "apply_rope": lambda: rooftop.apply_rope(q, k, cos, cos)}


if __name__ == "__main__":
    table = calls()
    for name in sys.argv[1:] or ["add_rms_norm"]:
        fn = table[name]
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(1000):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        print(f"==== {name}: 1000 calls")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
