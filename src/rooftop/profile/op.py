"""`rooftop profile <op>`: one op at one shape, with every figure this machine can give, diagnosed.

- GPU with Nsight Compute: ncu's reading of one cold call (DRAM bytes and throughput, SM throughput,
  occupancy and its limit, registers, shared memory, duration) plus the compiled kernels' resources
  and a do_bench timing; the diagnosis compares the bytes with the cost model's minimum.
- GPU without ncu: the compiled kernels' resources (registers, spills, shared memory, warps: the
  driver's figures) and the occupancy that follows from them, and the timing.
- no GPU: the kernels the op would launch on an H200, compiled here for sm_90 (profile.kernels), their
  resources and occupancy, and the floor the cost model gives on the H200's ceilings. No timing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rooftop.hardware import Ceilings
from rooftop.profile.diagnose import Diagnosis, diagnose
from rooftop.profile.occupancy import limits_for, occupancy
from rooftop.roofline import Cost, explain


@dataclass
class OpProfile:
    op: str
    shape: tuple
    dtype: str
    provider: str
    cost: Cost
    ceilings: Ceilings | None
    seconds: float | None = None  # per call, do_bench median
    ncu: dict | None = None
    kernels: list[dict] = field(default_factory=list)
    diagnoses: list[tuple[str, Diagnosis]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def roofline_text(self) -> str:
        label = f"{self.op} ({self.dtype}, {'x'.join(map(str, self.shape))}, {self.provider})"
        if self.ceilings is None:
            return f"{label}: no ceilings for this device, so no roofline."
        if self.seconds is not None:
            return explain(label, self.cost, self.seconds, self.ceilings)
        c = self.ceilings
        return (f"{label} must move {self.cost.bytes / 1e6:.1f} MB and do {self.cost.flops / 1e9:.2f} GFLOP: "
                f"{self.cost.bound(c)}-bound on {c.device} ({c.source} ceilings {c.copy_GBps:.0f} GB/s, "
                f"{c.bf16_mm_TFLOPs:.0f} TFLOP/s), floor {self.cost.floor_s(c) * 1e6:.1f} µs.")


def kernel_occupancy(kernel: dict, arch: str = "sm_90") -> dict:
    """Theoretical occupancy of a compiled kernel (n_regs, num_warps, shared) on `arch`."""
    occ = occupancy(int(kernel["n_regs"]), int(kernel["num_warps"]) * 32, int(kernel.get("shared") or 0),
                    limits_for(arch))
    return {"blocks_per_sm": occ.blocks_per_sm, "theoretical_occupancy_pct": occ.theoretical_pct,
            "limited_by": ", ".join(occ.limited_by) or "none"}


def profile(op: str, shape, dtype: str = "bf16", provider: str = "rooftop", use_ncu: bool = True) -> OpProfile:
    """Everything `rooftop profile` reports about `op` at `shape` on this machine."""
    import torch

    from rooftop import registry
    from rooftop.bench.sweep import parse_dtype
    from rooftop.hardware import ceilings_for
    from rooftop.profile import kernels as kern
    from rooftop.profile.ncu import find_ncu, profile_op

    spec = registry.get(op)
    shape = tuple(int(s) for s in shape)
    torch_dtype = parse_dtype(dtype)
    cost = spec.cost(shape, torch_dtype)
    on_gpu = torch.cuda.is_available()
    device = torch.cuda.get_device_name() if on_gpu else "NVIDIA H200"
    result = OpProfile(op, shape, dtype, provider, cost, None)
    try:
        result.ceilings = ceilings_for(device)
    except ValueError as err:
        result.notes.append(str(err))
    try:
        arch = limits_for(tuple(torch.cuda.get_device_capability()) if on_gpu else device).arch
    except ValueError:
        arch = "sm_90"

    if provider == "rooftop":
        try:
            result.kernels = kern.gpu_kernels(op, shape, dtype) if on_gpu else kern.offline_kernels(op, shape, dtype)
        except Exception as err:  # resources are a bonus: say why they are missing, go on
            result.notes.append(f"no compiled-kernel resources: {type(err).__name__}: {str(err)[:300]}")
        for k in result.kernels:
            k.update(kernel_occupancy(k, arch))
            if k.get("clobbered_mma_operands"):  # offline sm_90 compiles: a miscompile the results would show
                result.notes.append(f"{k['kernel']}: an MMA's register operand is overwritten inside its loop "
                                    f"(ptxas): {k['clobbered_mma_operands'][0]}")
        if not result.kernels and not any(n.startswith("no compiled") for n in result.notes):
            result.notes.append("no kernel launch went through rooftop.ops._support.launch: no resources")
    else:
        result.notes.append(f"{provider}'s kernels are not rooftop's: only Nsight Compute sees their resources")
    if not on_gpu:
        result.notes.append("No CUDA GPU here: kernels compiled offline for sm_90 (an H200 with 132 SMs); "
                            "no timing and no DRAM figures.")

    if on_gpu:
        from rooftop.bench import providers as prov
        from rooftop.bench.timing import bench_ms

        fn = prov.make(spec, provider)
        if fn is None:
            raise ValueError(f"profile: provider={provider!r} is not importable here")
        inputs = spec.make_inputs(shape, torch_dtype, "cuda")
        fn(*inputs)
        result.seconds = bench_ms(lambda: fn(*inputs)) * 1e-3
        del inputs
        if use_ncu and find_ncu():
            try:
                result.ncu = profile_op(op, shape, dtype, provider)
            except RuntimeError as err:
                result.notes.append(f"Nsight Compute failed: {str(err)[:300]}")
        elif use_ncu:
            result.notes.append("Nsight Compute (ncu) not found: resources and timing only.")

    itemsize = torch_dtype.itemsize
    if result.ncu is not None:
        reading = dict(result.ncu)
        main = next((k for k in result.kernels if k["kernel"] == reading.get("kernel")), None)
        if main is not None:
            reading["n_spills"] = main["n_spills"]
        result.diagnoses.append(("Nsight Compute", diagnose(reading, cost, shape, itemsize, result.ceilings, device)))
    else:
        for k in result.kernels:
            result.diagnoses.append((k["kernel"], diagnose(k, cost, shape, itemsize, result.ceilings, device)))
    return result
