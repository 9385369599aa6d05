"""Occupancy: how many programs (blocks) of a kernel fit on one SM at once, and what stops more.

A block needs registers (regs/thread x threads, handed to each warp in units of 256), shared memory
(its own plus 1 KB the driver reserves per block, in units of 128 bytes) and warp slots; an SM also
caps the blocks it holds. The smallest of the four counts is the number of blocks per SM; theoretical
occupancy is their warps over the SM's warp slots. These are the rules of NVIDIA's occupancy
calculator, the same Nsight Compute reports as launch__occupancy_limit_{registers,shared_mem,warps,
blocks}, so that a kernel's compiled resources give its occupancy without a profiler.
"""
from __future__ import annotations

from dataclasses import dataclass

from rooftop.hardware import lookup_spec

# The four resources, named as in Nsight Compute's launch__occupancy_limit_* metrics.
RESOURCES = ("registers", "shared_mem", "warps", "blocks")


@dataclass(frozen=True)
class SMLimits:
    """Per-SM limits of one GPU architecture (CUDA C Programming Guide, compute capabilities table)."""

    arch: str
    registers: int = 65536
    max_threads: int = 2048
    max_blocks: int = 32
    shared_mem: int = 228 * 1024
    max_shared_mem_per_block: int = 227 * 1024
    reserved_shared_mem_per_block: int = 1024
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers per warp are allocated in these units
    shared_alloc_unit: int = 128
    warp_size: int = 32

    @property
    def max_warps(self) -> int:
        return self.max_threads // self.warp_size


ARCH_LIMITS = {
    "sm_80": SMLimits("sm_80", shared_mem=164 * 1024, max_shared_mem_per_block=163 * 1024),
    "sm_89": SMLimits("sm_89", max_threads=1536, max_blocks=24, shared_mem=100 * 1024,
                      max_shared_mem_per_block=99 * 1024),
    "sm_90": SMLimits("sm_90"),
    "sm_100": SMLimits("sm_100"),
}
# hardware.DATASHEET entry -> architecture
_ARCH_OF_SPEC = {"H100 SXM": "sm_90", "H100 PCIe": "sm_90", "H200": "sm_90", "A100 40GB": "sm_80",
                 "A100 80GB": "sm_80", "A100 PCIe 80GB": "sm_80", "L40S": "sm_89", "RTX 4090": "sm_89",
                 "B200": "sm_100"}


def limits_for(device: str | tuple[int, int]) -> SMLimits:
    """SM limits of a device: a compute capability (9, 0), an "sm_90" name, or a device name."""
    if isinstance(device, tuple):
        arch = f"sm_{device[0]}{device[1]}"
    elif device.startswith("sm_"):
        arch = device
    else:
        spec = lookup_spec(device)
        arch = _ARCH_OF_SPEC.get(spec.name) if spec else None
        if arch is None:
            raise ValueError(f"limits_for: device={device!r} has no known architecture "
                             f"(known: {', '.join(_ARCH_OF_SPEC)})")
    if arch not in ARCH_LIMITS:
        raise ValueError(f"limits_for: device={device!r} ({arch}) has no limits table "
                         f"(known: {', '.join(ARCH_LIMITS)})")
    return ARCH_LIMITS[arch]


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Blocks per SM under each resource, the resulting theoretical occupancy, and what limits it."""

    blocks_per_sm: int
    warps_per_block: int
    limits: dict[str, int]  # resource -> blocks per SM it alone would allow
    theoretical_pct: float
    limited_by: tuple[str, ...]  # the resources at the minimum; empty at 100%


def occupancy_from_limits(limits: dict[str, float], threads_per_block: int,
                          sm: SMLimits = ARCH_LIMITS["sm_90"]) -> Occupancy:
    """Occupancy from per-resource block limits (e.g. as Nsight Compute reports them)."""
    limits = {name: int(limits[name]) for name in RESOURCES if limits.get(name) is not None}
    if not limits:
        raise ValueError("occupancy_from_limits: limits has none of " + ", ".join(RESOURCES))
    warps = -(-int(threads_per_block) // sm.warp_size)
    blocks = min(limits.values())
    pct = 100 * blocks * warps / sm.max_warps
    limited_by = () if pct >= 100 else tuple(n for n, v in limits.items() if v == blocks)
    return Occupancy(blocks, warps, limits, pct, limited_by)


def occupancy(regs_per_thread: int, threads_per_block: int, shared_per_block: int = 0,
              sm: SMLimits = ARCH_LIMITS["sm_90"]) -> Occupancy:
    """Theoretical occupancy of a kernel from its compiled resources.

    regs_per_thread: registers of one thread (CompiledKernel.n_regs); threads_per_block: num_warps * 32;
    shared_per_block: bytes of shared memory one block uses (CompiledKernel.metadata.shared).
    """
    if not 1 <= threads_per_block <= 1024:
        raise ValueError(f"occupancy: threads_per_block={threads_per_block} must be in 1..1024")
    if not 0 <= regs_per_thread <= sm.max_regs_per_thread:
        raise ValueError(f"occupancy: regs_per_thread={regs_per_thread} must be in 0..{sm.max_regs_per_thread}")
    if not 0 <= shared_per_block <= sm.max_shared_mem_per_block:
        raise ValueError(f"occupancy: shared_per_block={shared_per_block} must be in "
                         f"0..{sm.max_shared_mem_per_block} bytes on {sm.arch}")
    warps = -(-threads_per_block // sm.warp_size)
    regs_per_warp = _round_up(regs_per_thread * sm.warp_size, sm.reg_alloc_unit)
    smem = _round_up(shared_per_block + sm.reserved_shared_mem_per_block, sm.shared_alloc_unit)
    limits = {
        "registers": (sm.registers // regs_per_warp) // warps if regs_per_warp else sm.max_blocks,
        "shared_mem": sm.shared_mem // smem,
        "warps": sm.max_warps // warps,
        "blocks": sm.max_blocks,
    }
    return occupancy_from_limits(limits, threads_per_block, sm)


def max_regs_for(blocks_per_sm: int, threads_per_block: int, sm: SMLimits = ARCH_LIMITS["sm_90"]) -> int:
    """The most registers per thread that still let `blocks_per_sm` blocks of this size share an SM."""
    warps = -(-threads_per_block // sm.warp_size)
    per_warp = sm.registers // (blocks_per_sm * warps) // sm.reg_alloc_unit * sm.reg_alloc_unit
    return min(sm.max_regs_per_thread, per_warp // sm.warp_size)
