"""What quant_matmul's tuner chooses for int4 at M = 1 and 16 (14336 x 4096, 28672 x 8192) and each candidate's time
as the tuner times it (rooftop.ops._autotune.time_ms). Usage: PYTHONPATH=src python benchmarks/probe_quant_tuner.py"""
import json

import torch

import rooftop
from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm

sms = torch.cuda.get_device_properties(0).multi_processor_count
for M in (16, 1):
    for N, K in ((14336, 4096), (28672, 8192)):
        x, qw, w = qm._make_inputs(4)((M, N, K), torch.bfloat16, "cuda")
        rooftop.quant_matmul(x, qw)
        mma = qm._use_mma(x, 4)
        print(f"{M}x{N}x{K}: _use_mma {mma}")
        for config in qm.candidates(M, N, K, 4, 128, x.dtype, sms, qm._use_gluon(x, qw.packed, qw.scales, qw.zeros, 4,
                                                                                 128), mma):
            us = _autotune.time_ms(lambda: qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, 4,
                                                           128)[0]) * 1e3
            print(f"  {us:7.1f} us  {config}")
entries = json.loads(_autotune.cache_path(_autotune.device_name(0)).read_text())
print(json.dumps({k: v for k, v in entries.items() if k.startswith("quant_matmul")}, indent=1))
