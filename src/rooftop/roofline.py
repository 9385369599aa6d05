"""The roofline: how fast an op could run at best, how close it got, and why.

An op's floor is max(bytes / copy bandwidth, flops / matmul rate), both measured on the device
(hardware.Ceilings). The matrix units' rate is the compute roof because that is what our LLM ops
would have to beat; element-wise maths never comes near it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from rooftop.hardware import Ceilings


@dataclass(frozen=True)
class Cost:
    """Minimum work of one call: floating-point operations and bytes moved to and from DRAM.
    `compute_scale`: the op's compute roof as a multiple of the measured bf16 matmul rate (2 for fp8
    tensor cores, the datasheet ratio on Hopper and Blackwell; not measured)."""

    flops: float
    bytes: float
    compute_scale: float = 1.0

    def __post_init__(self):
        if self.flops < 0 or self.bytes < 0:
            raise ValueError(f"Cost: flops={self.flops} and bytes={self.bytes} must be >= 0")

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes if self.bytes else math.inf

    def memory_time_s(self, c: Ceilings) -> float:
        return self.bytes / (c.copy_GBps * 1e9)

    def compute_time_s(self, c: Ceilings) -> float:
        return self.flops / (c.bf16_mm_TFLOPs * self.compute_scale * 1e12)

    def floor_s(self, c: Ceilings) -> float:
        return max(self.memory_time_s(c), self.compute_time_s(c))

    def bound(self, c: Ceilings) -> str:
        return "memory" if self.memory_time_s(c) >= self.compute_time_s(c) else "compute"

    def roofline_pct(self, seconds: float, c: Ceilings) -> float:
        return 100 * self.floor_s(c) / _positive(seconds)

    def achieved_GBps(self, seconds: float) -> float:
        return self.bytes / _positive(seconds) / 1e9

    def achieved_TFLOPs(self, seconds: float) -> float:
        return self.flops / _positive(seconds) / 1e12

    def __add__(self, other: Cost) -> Cost:
        if self.compute_scale != other.compute_scale:
            raise ValueError("Cost: cannot add costs with different compute roofs")
        return Cost(self.flops + other.flops, self.bytes + other.bytes, self.compute_scale)


def _positive(seconds: float) -> float:
    if not seconds > 0:
        raise ValueError(f"seconds={seconds} must be > 0")
    return seconds


def ridge_point(c: Ceilings) -> float:
    """Intensity (FLOP/byte) above which an op is compute-bound."""
    return c.bf16_mm_TFLOPs * 1e12 / (c.copy_GBps * 1e9)


def attainable_TFLOPs(intensity: float, c: Ceilings) -> float:
    return min(c.bf16_mm_TFLOPs, intensity * c.copy_GBps / 1e3)


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2g}"


def _time(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


# Below this a kernel's time is mostly launch and latency, not bandwidth.
LAUNCH_BOUND_S = 10e-6
AT_CEILING_PCT = 85


def _extra_bytes_pct(cost: Cost, ncu: dict) -> float | None:
    if ncu.get("dram_bytes") is None or not cost.bytes:
        return None
    return 100 * (ncu["dram_bytes"] / cost.bytes - 1)


def _ncu_sentence(cost: Cost, ncu: dict) -> str | None:
    parts = []
    extra = _extra_bytes_pct(cost, ncu)
    if extra is not None:
        moved = f"{ncu['dram_bytes'] / 1e6:.1f} MB against {cost.bytes / 1e6:.1f} MB"
        if extra > 10:
            parts.append(f"moves {extra:.0f}% more bytes than the minimum ({moved}): re-reads")
        elif extra < -10:
            parts.append(f"moves {-extra:.0f}% fewer bytes than the minimum ({moved}): part came from L2")
        else:
            parts.append(f"moves the minimum bytes ({moved})")
    if ncu.get("dram_throughput_pct") is not None:
        parts.append(f"DRAM throughput {ncu['dram_throughput_pct']:.1f}% of peak")
    if ncu.get("achieved_occupancy_pct") is not None:
        occupancy = f"achieved occupancy {ncu['achieved_occupancy_pct']:.1f}%"
        if ncu.get("theoretical_occupancy_pct") is not None:
            occupancy += f" (theoretical {ncu['theoretical_occupancy_pct']:.1f}%)"
        parts.append(occupancy)
    if ncu.get("registers_per_thread") is not None:
        parts.append(f"{ncu['registers_per_thread']:.0f} registers/thread")
    if ncu.get("spill_bytes"):
        parts.append(f"{ncu['spill_bytes']:.0f} bytes of register spills")
    if ncu.get("shared_mem_per_block") is not None:
        parts.append(f"{ncu['shared_mem_per_block']:.0f} bytes of shared memory/block")
    if ncu.get("duration_us") is not None:
        parts.append(f"{ncu['duration_us']:.1f} µs under ncu")
    return "Nsight Compute: " + "; ".join(parts) + "." if parts else None


def _advice(cost: Cost, bound: str, pct: float, seconds: float, ncu: dict | None) -> str:
    if bound == "memory" and pct >= AT_CEILING_PCT:
        return ("It is at the copy ceiling; only moving fewer bytes (fusing with its neighbour, "
                "quantizing to 8/4 bits) makes it faster.")
    if bound == "compute" and pct >= AT_CEILING_PCT:
        return ("It is at the matmul ceiling; only less work makes it faster "
                "(fuse the epilogue so no extra pass touches the output, or drop to fp8).")
    if seconds < LAUNCH_BOUND_S:
        return (f"At {_time(seconds)} it is launch/latency bound rather than {bound}-bound: "
                "capture it in a CUDA graph or fuse it with its neighbours.")
    if bound == "compute":
        return ("To close the gap re-tile (block sizes, pipeline stages, L2-friendly program order), "
                "check tensor-core utilisation, and fuse the epilogue.")
    causes = []
    if ncu:
        if (_extra_bytes_pct(cost, ncu) or 0) > 10:
            causes.append("the re-reads (keep the data on chip between passes)")
        if ncu.get("spill_bytes"):
            causes.append("the register spills")
        if (ncu.get("achieved_occupancy_pct") or 100) < 40:
            causes.append("the low occupancy (too little work in flight)")
    if causes:
        return "To close the gap fix " + ", ".join(causes) + "."
    return ("To close the gap look for re-reads of the input, too little work in flight "
            "(too few programs or loads per SM), launch overhead and register spills.")


def explain(op: str, cost: Cost, seconds: float, c: Ceilings, ncu: dict | None = None,
            baseline: dict[str, float] | None = None) -> str:
    """A short plain-words diagnosis of one measurement of `op` (seconds per call) on ceilings c.

    ncu: an Nsight Compute reading (dram_bytes, dram_throughput_pct, occupancy, registers...);
    baseline: provider -> seconds of the same call, to state the speed-up.
    """
    bound = cost.bound(c)
    pct = cost.roofline_pct(seconds, c)
    side = "below" if bound == "memory" else "above"
    if bound == "memory":
        achieved = f"{cost.achieved_GBps(seconds):.0f} GB/s of the {c.copy_GBps:.0f} GB/s copy ceiling"
    else:
        achieved = (f"{cost.achieved_TFLOPs(seconds):.1f} TFLOP/s of the "
                    f"{c.bf16_mm_TFLOPs:.0f} TFLOP/s bf16 matmul ceiling")
    sentences = [
        f"{op} is {bound}-bound: its intensity, {_num(cost.intensity)} FLOP/byte, is {side} "
        f"the ridge point of {_num(ridge_point(c))} FLOP/byte on {c.device}.",
        f"At {_time(seconds)} it reaches {pct:.1f}% of its roofline "
        f"(floor {_time(cost.floor_s(c))}): {achieved}.",
    ]
    if ncu and (ncu_text := _ncu_sentence(cost, ncu)):
        sentences.append(ncu_text)
    sentences.append(_advice(cost, bound, pct, seconds, ncu))
    if baseline:
        speedups = ", ".join(f"{base_s / seconds:.2f}x over {name}" for name, base_s in baseline.items())
        sentences.append(f"Speed-up: {speedups}.")
    return " ".join(sentences)


_MARKERS = "os^Dv<>PX*"


def plot_roofline(points: list[dict], c: Ceilings, path, title: str | None = None) -> Path:
    """Log-log roofline chart (PNG) of points: dicts of label, intensity, TFLOPs, provider."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for p in points:
        if not (p["intensity"] > 0 and p["TFLOPs"] > 0):
            raise ValueError(f"plot_roofline: point {p['label']!r} needs intensity > 0 and TFLOPs > 0, "
                             f"got {p['intensity']} and {p['TFLOPs']}")
    ridge = ridge_point(c)
    intensities = [p["intensity"] for p in points] + [ridge]
    x_lo, x_hi = min(intensities) / 4, max(intensities) * 8

    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.plot([x_lo, ridge], [attainable_TFLOPs(x_lo, c), c.bf16_mm_TFLOPs], color="black",
            label=f"copy {c.copy_GBps:.0f} GB/s")
    ax.plot([ridge, x_hi], [c.bf16_mm_TFLOPs] * 2, color="dimgray", linewidth=2.5,
            label=f"bf16 matmul {c.bf16_mm_TFLOPs:.0f} TFLOP/s")
    ax.axvline(ridge, color="gray", linestyle=":", linewidth=1)
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, c.bf16_mm_TFLOPs), textcoords="offset points",
                xytext=(4, -14), fontsize=8, color="gray")

    providers = list(dict.fromkeys(p["provider"] for p in points))
    for i, provider in enumerate(providers):
        mine = [p for p in points if p["provider"] == provider]
        ax.scatter([p["intensity"] for p in mine], [p["TFLOPs"] for p in mine],
                   marker=_MARKERS[i % len(_MARKERS)], s=40, zorder=3, label=provider)
        for p in mine:
            ax.annotate(p["label"], (p["intensity"], p["TFLOPs"]), textcoords="offset points",
                        xytext=(5, 3), fontsize=7)

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title or f"Roofline: {c.device} ({c.source} ceilings, {c.date})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
