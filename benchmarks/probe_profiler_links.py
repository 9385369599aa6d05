"""Which profiler event holds each GPU kernel of a small HF Llama forward (why cuBLAS's kernels were not
attributed to aten::mm by rooftop profile --model). Prints, per kernel name, the event that lists it
in .kernels and that event's parent chain. Usage: PYTHONPATH=src python benchmarks/probe_profiler_links.py"""
import torch

from rooftop.profile.model import build_model

case = build_model(None, "cuda", torch.bfloat16, 2, 128)
run = (lambda: case.model(**case.inputs)) if isinstance(case.inputs, dict) else (lambda: case.model(*case.inputs))
with torch.inference_mode():
    run()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                record_shapes=True) as prof:
        run()
        torch.cuda.synchronize()
seen = set()
for e in prof.events():
    for k in e.kernels:
        if k.name in seen:
            continue
        seen.add(k.name)
        chain, p = [], e
        while p is not None:
            chain.append(f"{p.name}[{p.device_type}]")
            p = p.cpu_parent
        print(k.name[:50], "<-", " <- ".join(chain[:6]))
orphans = [e for e in prof.events() if e.device_type != torch.autograd.DeviceType.CPU and e.cpu_parent is None]
print("device events without a CPU parent:", len(orphans), sorted({o.name[:40] for o in orphans})[:8])

from rooftop.profile.model import attribute, known_op  # noqa: E402

mms = [e for e in prof.events() if e.name == "aten::mm"][:3]
for e in mms:
    print("aten::mm input_dtypes", getattr(e, "input_dtypes", None), "shapes", e.input_shapes, "->", known_op(e))
print([(r.kernel[:40], r.op) for r in attribute(prof.events(), None, True)[:6]])
