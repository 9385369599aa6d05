"""Run one op under Nsight Compute and read the figures that explain a bottleneck.

The op runs in a child process (`python -m rooftop.profile.ncu <op> ...`): warm-up calls first, then
one call inside the NVTX range "rooftop_profile", the only one ncu profiles (--nvtx-include). ncu
flushes the caches before the profiled kernel, so DRAM bytes are those of one cold call; we compare
them with the cost model's minimum. Clocks are left alone (--clock-control none).
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

from rooftop.profile.occupancy import RESOURCES, occupancy_from_limits

METRICS = {
    "gpu__time_duration.sum": "duration_us",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "dram__bytes_read.sum": "dram_bytes_read",
    "dram__bytes_write.sum": "dram_bytes_write",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__shared_mem_per_block_static": "static_shared_mem_per_block",
    "launch__shared_mem_per_block_dynamic": "dynamic_shared_mem_per_block",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps": "occupancy_limit_warps",
    "launch__occupancy_limit_blocks": "occupancy_limit_blocks",
    "launch__block_size": "block_size",
    "launch__grid_size": "grid_size",
}
# duration comes in ns, bytes in bytes (we ask ncu for base units with --print-units base)


def find_ncu() -> str | None:
    for candidate in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def _limiting_resource(k: dict) -> str:
    """The resources that cap blocks per SM ("none" at full theoretical occupancy)."""
    limits = {name: k.get(f"occupancy_limit_{name}") for name in RESOURCES}
    if all(v is None for v in limits.values()) or not k.get("block_size"):
        return "unknown"
    return ", ".join(occupancy_from_limits(limits, int(k["block_size"])).limited_by) or "none"


def parse_csv(text: str) -> list[dict]:
    """Kernels from `ncu --csv --page raw --print-units base` output, with our metric names."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    reader = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    kernels = []
    for row in reader[1:]:  # reader[0] holds the units
        k = {"kernel": row.get("Kernel Name", "")}
        for metric, name in METRICS.items():
            value = row.get(metric, "").replace(",", "")
            try:
                k[name] = float(value)
            except ValueError:
                continue
        if "duration_us" in k:
            k["duration_us"] /= 1e3  # ns -> us
        k["dram_bytes"] = k.get("dram_bytes_read", 0.0) + k.get("dram_bytes_write", 0.0)
        k["occupancy_limited_by"] = _limiting_resource(k)
        kernels.append(k)
    return kernels


def summarize(kernels: list[dict]) -> dict:
    """One op may launch several kernels: sum durations and bytes, take the figures of the longest."""
    if not kernels:
        return {}
    main = max(kernels, key=lambda k: k.get("duration_us", 0.0))
    out = dict(main)
    out["kernels"] = len(kernels)
    out["kernel_names"] = list(dict.fromkeys(k["kernel"] for k in kernels))
    out["duration_us"] = sum(k.get("duration_us", 0.0) for k in kernels)
    out["dram_bytes"] = sum(k["dram_bytes"] for k in kernels)
    return out


def profile_op(op: str, shape, dtype: str = "bf16", provider: str = "rooftop", timeout: float = 300) -> dict:
    """ncu figures of one call of `op` by `provider`; raises RuntimeError when ncu is missing or fails."""
    ncu = find_ncu()
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "rooftop_profile/", "--csv",
               "--page", "raw", "--print-units", "base", "--metrics", ",".join(METRICS), "--log-file", log,
               sys.executable, "-m", "rooftop.profile.ncu", op, ",".join(map(str, shape)), dtype, provider]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = open(log).read() if os.path.exists(log) else ""
        kernels = parse_csv(text)
        if proc.returncode != 0 or not kernels:
            raise RuntimeError(f"ncu failed (exit {proc.returncode}): {(proc.stderr or text)[-600:]}")
    result = summarize(kernels)
    result.update(op=op, provider=provider, shape=list(shape), dtype=dtype)
    return result


def _run_once(op: str, shape: str, dtype: str, provider: str) -> None:
    """Child process body: warm up, then one call in the NVTX range ncu profiles."""
    import torch

    from rooftop import registry
    from rooftop.bench import providers as prov
    from rooftop.bench.sweep import parse_dtype

    spec = registry.get(op)
    inputs = spec.make_inputs(tuple(int(s) for s in shape.split(",")), parse_dtype(dtype), "cuda")
    fn = prov.make(spec, provider)
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("rooftop_profile")
    fn(*inputs)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    _run_once(*sys.argv[1:5])
