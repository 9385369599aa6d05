"""Why rooftop's kernels in `rooftop profile --model tiny` on the GPU got no op or no roofline (session 30 call d):
the unlinked device kernels and the driver launch calls left without a kernel, in order, and the attributed rows.
Usage: PYTHONPATH=src python benchmarks/probe_profile_attribution.py"""
import torch

from rooftop.hardware import ceilings_for
from rooftop.profile import model as pm

case = pm.build_model("tiny", "cuda", torch.bfloat16, 1, 16)
with torch.inference_mode():
    for _ in range(2):
        case.model(*case.inputs) if not isinstance(case.inputs, dict) else case.model(**case.inputs)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        case.model(*case.inputs) if not isinstance(case.inputs, dict) else case.model(**case.inputs)
        torch.cuda.synchronize()
events = prof.events()
adopted, orphans = pm._unlinked_kernels(events)
cpu = torch.autograd.DeviceType.CPU
launches = [(e.name, e.cpu_parent.name if e.cpu_parent else None, len(e.kernels)) for e in events
            if e.device_type == cpu and e.name.startswith(("cuLaunch", "cudaLaunch"))]
print("launch calls (name, parent, kernels):", launches[:40])
print("device events:", [(e.name[:30], e.device_type) for e in events if e.device_type != cpu][:40])
print("adopted:", list(adopted.values())[:20], "orphans:", orphans[:20])
for r in pm.attribute(events, ceilings_for(), True, torch.bfloat16):
    print(r)
