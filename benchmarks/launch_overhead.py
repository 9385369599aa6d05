"""Where the host time of one small call goes: cProfile of back-to-back decode-size add + RMSNorm calls."""
import cProfile
import os
import pstats

import torch

import rooftop

print({k: v for k, v in os.environ.items() if k.startswith(("TORCH", "TRITON", "CUDA_LAUNCH"))})
x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
res = torch.randn_like(x)
w = torch.rand(4096, device="cuda", dtype=torch.bfloat16)
for _ in range(10):
    rooftop.rms_norm(x, w, 1e-6, residual=res)
torch.cuda.synchronize()
prof = cProfile.Profile()
prof.enable()
for _ in range(2000):
    rooftop.rms_norm(x, w, 1e-6, residual=res)
torch.cuda.synchronize()
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(14)
