"""What the GPU can do: datasheet figures and measured ceilings.

The roofline uses *measured* ceilings (a 1 GiB device copy, an 8192^3 bf16 matmul), cached per
device, because datasheet peaks are never reached: on an H200 the copy gets ~4250 of 4800 GB/s and
cuBLAS ~700 of 989 TFLOP/s. The datasheet is the fallback when nothing has been measured.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class DeviceSpec:
    """Datasheet figures of one GPU; TFLOP/s are dense (no 2:4 sparsity)."""

    name: str
    memory_GB: float
    mem_GBps: float
    sms: int
    l2_MB: float
    bf16_TFLOPs: float
    fp16_TFLOPs: float
    fp8_TFLOPs: float | None  # None: no fp8 tensor cores
    fp32_TFLOPs: float  # plain FP32 (CUDA cores), not TF32
    match: tuple[str, ...]  # substrings of torch.cuda.get_device_name(), whole words


# NVIDIA's public datasheet numbers. These are leads only: the roofline uses measured ceilings.
DATASHEET: dict[str, DeviceSpec] = {
    spec.name: spec
    for spec in [
        DeviceSpec("H100 SXM", 80, 3350, 132, 50, 989, 989, 1979, 67,
                   match=("H100 SXM", "H100 80GB HBM3")),
        DeviceSpec("H100 PCIe", 80, 2000, 114, 50, 756, 756, 1513, 51,
                   match=("H100 PCIE",)),
        DeviceSpec("H200", 141, 4800, 132, 60, 989, 989, 1979, 67,
                   match=("H200",)),
        DeviceSpec("A100 40GB", 40, 1555, 108, 40, 312, 312, None, 19.5,
                   match=("A100 40GB", "A100 SXM4 40GB", "A100 PCIE 40GB")),
        DeviceSpec("A100 80GB", 80, 2039, 108, 40, 312, 312, None, 19.5,
                   match=("A100 80GB", "A100 SXM4 80GB")),
        # The PCIe 80GB card has slower HBM than the SXM one.
        DeviceSpec("A100 PCIe 80GB", 80, 1935, 108, 40, 312, 312, None, 19.5,
                   match=("A100 80GB PCIE", "A100 PCIE 80GB")),
        DeviceSpec("L40S", 48, 864, 142, 96, 362.05, 362.05, 733, 91.6,
                   match=("L40S",)),
        # GeForce: tensor rates with FP32 accumulation (what our kernels use), half the FP16-acc rate.
        DeviceSpec("RTX 4090", 24, 1008, 128, 72, 165.2, 165.2, 330.3, 82.6,
                   match=("RTX 4090",)),
        # HGX B200 per-GPU figures (180 GB, 8 TB/s).
        DeviceSpec("B200", 180, 8000, 148, 126, 2250, 2250, 4500, 75,
                   match=("B200",)),
    ]
}


def _words(name: str) -> str:
    """Upper-case, separators as spaces, padded, so that matching is by whole words."""
    return " " + " ".join(re.split(r"[\s\-_]+", name.upper().strip())) + " "


def lookup_spec(device_name: str) -> DeviceSpec | None:
    """The datasheet entry for a torch device name (e.g. "NVIDIA H100 80GB HBM3"), or None."""
    words = _words(device_name)
    best, best_len = None, 0
    for spec in DATASHEET.values():
        for pattern in (spec.name, *spec.match):
            # The longest match wins: "A100 80GB PCIE" beats "A100 80GB".
            if _words(pattern) in words and len(pattern) > best_len:
                best, best_len = spec, len(pattern)
    return best


@dataclass(frozen=True)
class Ceilings:
    """What the roofline divides by: copy bandwidth and bf16 matmul rate of one device."""

    device: str
    copy_GBps: float
    bf16_mm_TFLOPs: float
    source: str  # "measured", "cache", "results" or "datasheet"
    date: str  # yyyy-mm-dd
    torch: str

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Ceilings:
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in d]
        if missing:
            raise ValueError(f"Ceilings.from_json: d lacks keys {missing}")
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})


def cache_dir() -> Path:
    if os.environ.get("ROOFTOP_CACHE_DIR"):
        return Path(os.environ["ROOFTOP_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "rooftop"
    return Path.home() / ".cache" / "rooftop"


def _cache_path(device_name: str) -> Path:
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    return cache_dir() / f"ceilings-{slug}.json"


def _read_cache(device_name: str) -> Ceilings | None:
    path = _cache_path(device_name)
    if not path.exists():
        return None
    try:
        cached = Ceilings.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError) as err:
        warnings.warn(f"ignoring unreadable ceilings cache {path}: {err}")
        return None
    return dataclasses.replace(cached, source="cache")


def _require_cuda(what: str) -> None:
    if not torch.cuda.is_available():
        raise RuntimeError(f"{what}: no CUDA device visible to torch (torch {torch.__version__})")


def measure_ceilings(device=None, refresh: bool = False) -> Ceilings:
    """Measure (or read from the cache) the copy bandwidth and bf16 matmul rate of a CUDA GPU.

    device: anything torch.cuda accepts (None: the current device). refresh: measure even if cached.
    """
    _require_cuda("measure_ceilings")
    from rooftop.bench.timing import bench_ms

    device = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    name = torch.cuda.get_device_name(device)
    if not refresh and (cached := _read_cache(name)) is not None:
        return cached

    with torch.cuda.device(device):
        # 1 GiB, far beyond L2; counted as read + write.
        nbytes = 2**30
        src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        copy_ms = bench_ms(lambda: dst.copy_(src))
        del src, dst

        n = 8192
        a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
        b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
        c = torch.empty(n, n, dtype=torch.bfloat16, device=device)
        mm_ms = bench_ms(lambda: torch.mm(a, b, out=c))
        del a, b, c
        torch.cuda.empty_cache()

    ceilings = Ceilings(
        device=name,
        copy_GBps=2 * nbytes / (copy_ms * 1e-3) / 1e9,
        bf16_mm_TFLOPs=2 * n**3 / (mm_ms * 1e-3) / 1e12,
        source="measured",
        date=datetime.date.today().isoformat(),
        torch=torch.__version__,
    )
    path = _cache_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ceilings.to_json(), indent=1))
    return ceilings


def ceilings_for(device_name: str | None = None) -> Ceilings:
    """The ceilings to use without measuring: the cached measurement, else the datasheet."""
    if device_name is None:
        if not torch.cuda.is_available():
            raise RuntimeError(
                "ceilings_for: no device_name given and no CUDA device visible to torch; "
                "pass device_name, e.g. 'NVIDIA H200'"
            )
        device_name = torch.cuda.get_device_name()
    if (cached := _read_cache(device_name)) is not None:
        return cached
    spec = lookup_spec(device_name)
    if spec is None:
        raise ValueError(
            f"ceilings_for: device_name={device_name!r} has no cached measurement in {cache_dir()} "
            f"and no datasheet entry (known: {', '.join(DATASHEET)}); run measure_ceilings() on it"
        )
    return Ceilings(
        device=device_name,
        copy_GBps=spec.mem_GBps,
        bf16_mm_TFLOPs=spec.bf16_TFLOPs,
        source="datasheet",
        date=datetime.date.today().isoformat(),
        torch=torch.__version__,
    )


def device_info() -> dict:
    """The present GPU as torch reports it, with torch and triton versions."""
    import triton

    info = {"torch": torch.__version__, "triton": triton.__version__}
    if not torch.cuda.is_available():
        info["message"] = "no CUDA device visible to torch"
        return info
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    info.update(
        name=props.name,
        capability=f"{props.major}.{props.minor}",
        sms=props.multi_processor_count,
        l2_MB=props.L2_cache_size / 2**20,
        memory_GB=round(props.total_memory / 1e9, 1),
    )
    return info
