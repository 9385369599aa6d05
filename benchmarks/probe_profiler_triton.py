"""Does torch.profiler see Triton kernels on this machine, and by which launch path (journal item 192: rooftop's
kernels were missing from `rooftop profile --model`)? For each way of launching, the kernels found in
prof.events() (device type, linked correlation id, CPU parent) and in the exported Chrome trace.
Usage: PYTHONPATH=src python benchmarks/probe_profiler_triton.py TMPDIR"""
import json
import os
import sys

import torch
import triton
import triton.language as tl

import rooftop


@triton.jit
def _probe_add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
y = torch.empty_like(x)
compiled_add = torch.compile(lambda t: t * 2 + 1)
graph = torch.cuda.CUDAGraph()
rooftop.rms_norm(x, w)
with torch.cuda.graph(graph):
    rooftop.rms_norm(x, w)

cases = {
    "triton kernel[grid]": lambda: _probe_add_kernel[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024),
    "rooftop.rms_norm": lambda: rooftop.rms_norm(x, w),
    "torch.compile (inductor)": lambda: compiled_add(x),
    "rooftop.rms_norm in a graph replay": graph.replay,
}
out = sys.argv[1]
for name, fn in cases.items():
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        with torch.profiler.record_function("probe_call"):
            fn()
        torch.cuda.synchronize()
    events = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            events.append((e.name[:40], "device event", getattr(e, "linked_correlation_id", "?"),
                           e.cpu_parent.name if e.cpu_parent is not None else None))
        for k in e.kernels:
            events.append((k.name[:40], f"kernel of {e.name[:30]}", None, None))
    path = os.path.join(out, "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    in_trace = sorted({(ev.get("cat"), ev.get("name", "")[:40]) for ev in trace.get("traceEvents", [])
                       if ev.get("cat") in ("kernel", "cuda_driver", "cuda_runtime")})
    print(f"== {name}\n  events: {events}\n  trace: {in_trace}")
