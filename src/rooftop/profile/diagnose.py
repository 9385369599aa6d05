"""A kernel's hardware figures turned into a diagnosis in plain words.

The reading is either Nsight Compute's (profile.ncu: DRAM bytes read/written, DRAM and SM throughput,
achieved and theoretical occupancy with each resource's block limit, registers, shared memory, grid,
duration) or, without ncu, the compiled kernel's own resources (profile.kernels: n_regs, n_spills,
shared, num_warps, grid). The diagnosis compares the bytes moved with the cost model's minimum and,
where a row is read twice, asks whether the rows in flight fit in L2; then it names what holds the
kernel back. Every figure in it is computed from the reading, the cost model and the device tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rooftop.hardware import Ceilings, lookup_spec
from rooftop.profile.occupancy import Occupancy, limits_for, max_regs_for, occupancy, occupancy_from_limits
from rooftop.roofline import LAUNCH_BOUND_S, Cost

EXTRA_BYTES_PCT = 10  # measured DRAM bytes this far from the cost model are worth a sentence
NEAR_COPY = 0.9  # DRAM throughput within this fraction of the copy's counts as at the ceiling
SM_BOUND_PCT = 70  # SM throughput above this (and above DRAM's) means instruction-bound
LOW_OCCUPANCY_PCT = 60  # below this, too few warps to hide DRAM latency with one load each


@dataclass
class Diagnosis:
    """Sentences in plain words, a one-word verdict and the figures computed on the way."""

    sentences: list[str]
    verdict: str  # at-ceiling, re-reads, latency, instructions, launch, compute, resources, unknown
    figures: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f} MB"


def _kb(nbytes: float) -> str:
    return f"{nbytes / 1024:g} KB" if nbytes % 1024 == 0 else f"{nbytes / 1024:.1f} KB"


def reading_occupancy(reading: dict, arch: str = "sm_90") -> Occupancy | None:
    """Occupancy from ncu's per-resource limits when present, else from the compiled resources."""
    threads = reading.get("block_size") or (reading["num_warps"] * 32 if reading.get("num_warps") else None)
    if not threads:
        return None
    sm = limits_for(arch)
    limits = {name: reading.get(f"occupancy_limit_{name}") for name in ("registers", "shared_mem", "warps", "blocks")}
    if any(v is not None for v in limits.values()):
        return occupancy_from_limits(limits, int(threads), sm)
    regs = reading.get("registers_per_thread", reading.get("n_regs"))
    if regs is None:
        return None
    shared = reading.get("shared", (reading.get("static_shared_mem_per_block") or 0)
                         + (reading.get("dynamic_shared_mem_per_block") or 0))
    return occupancy(int(regs), int(threads), int(shared), sm)


def _occupancy_sentence(reading: dict, occ: Occupancy, sm_arch: str) -> str:
    threads = occ.warps_per_block * 32
    shape = f"{occ.blocks_per_sm} block{'s' if occ.blocks_per_sm != 1 else ''} of {threads} threads per SM"
    achieved = reading.get("achieved_occupancy_pct")
    head = (f"Achieved occupancy {achieved:.1f}% of a theoretical {occ.theoretical_pct:.0f}%" if achieved is not None
            else f"Theoretical occupancy {occ.theoretical_pct:.0f}%")
    if not occ.limited_by:
        return f"{head} ({shape}: every warp slot can be filled)."
    why = []
    regs = reading.get("registers_per_thread", reading.get("n_regs"))
    for name in occ.limited_by:
        if name == "registers" and regs is not None:
            fit = max_regs_for(occ.blocks_per_sm + 1, threads, limits_for(sm_arch))
            why.append(f"registers: {regs:.0f} per thread; at most {fit} would fit {occ.blocks_per_sm + 1} blocks")
        elif name == "shared_mem":
            shared = reading.get("shared", (reading.get("static_shared_mem_per_block") or 0)
                                 + (reading.get("dynamic_shared_mem_per_block") or 0))
            why.append(f"shared memory: {_kb(shared)} per block")
        elif name == "warps":
            why.append(f"warp slots: {threads}-thread blocks")
        else:
            why.append(f"the SM's cap of {occ.blocks_per_sm} blocks")
    return f"{head}: {shape}, limited by " + " and by ".join(why) + "."


def _traffic_sentences(reading: dict, cost: Cost, shape, itemsize, occ: Occupancy | None, sms, l2_bytes,
                       l2_label, figures: dict) -> list[str]:
    read, write = reading.get("dram_bytes_read"), reading.get("dram_bytes_write")
    moved = reading.get("dram_bytes")
    if moved is None and read is not None and write is not None:
        moved = read + write
    if moved is None or not cost.bytes:
        return []
    extra = 100 * (moved / cost.bytes - 1)
    figures.update(dram_bytes=moved, min_bytes=cost.bytes, extra_bytes_pct=extra)
    parts = f"{_mb(read)} read + {_mb(write)} written = " if read is not None and write is not None else ""
    head = (f"DRAM traffic {parts}{_mb(moved)} against the cost model's minimum of {_mb(cost.bytes)} "
            f"({extra:+.1f}%)")
    if abs(extra) <= EXTRA_BYTES_PCT:
        figures["traffic_cause"] = "the minimum"
        return [f"{head}: within {EXTRA_BYTES_PCT}%, so no data is read twice from DRAM."]
    if extra < 0:
        deficit = cost.bytes - moved
        if l2_bytes and deficit <= l2_bytes:
            figures["traffic_cause"] = f"{_mb(deficit)} of output still in the write-back L2 at the end"
            return [f"{head}: {_mb(deficit)} short, less than the {l2_label} L2, so that much of the output "
                    f"was still in the write-back L2 when the kernel ended (or input was already there); "
                    f"the kernel moved no more than the minimum."]
        figures["traffic_cause"] = "fewer bytes than the cost model: it overcounts"
        return [f"{head}: more bytes missing than L2 holds, so the cost model overcounts this op."]
    sentences = [f"{head}: more than {EXTRA_BYTES_PCT}% above it, so data is read from DRAM more than once."]
    figures["traffic_cause"] = "re-reads"
    if (reading.get("kernels") or 1) > 1:
        figures["traffic_cause"] = f"intermediates between {reading['kernels']:.0f} kernels"
        sentences.append(f"The op ran {reading['kernels']:.0f} kernels, so intermediate results go through DRAM.")
    grid = reading.get("grid_size")
    if shape is not None and len(shape) == 2 and itemsize and grid and occ and sms and l2_bytes:
        resident = int(min(grid, sms * occ.blocks_per_sm))
        row_bytes = shape[-1] * itemsize
        in_flight = resident * row_bytes
        figures.update(resident_programs=resident, row_bytes=row_bytes, in_flight_bytes=in_flight,
                       l2_overflow=in_flight > l2_bytes)
        held = (f"{resident} programs are resident at once ({occ.blocks_per_sm} per SM on {sms} SMs), "
                f"each on a row of {_kb(row_bytes)}: {_mb(in_flight)} of rows in flight")
        if in_flight > l2_bytes:
            figures["traffic_cause"] = (f"L2 overflow of the second pass: {_mb(in_flight)} of rows in flight "
                                        f"> {l2_label} L2")
            sentences.append(f"{held}, more than the {l2_label} L2, so a row read a second time has been "
                             f"evicted meanwhile and comes from DRAM again (L2 overflow of the second pass).")
        else:
            figures["traffic_cause"] = f"re-reads; the {_mb(in_flight)} of rows in flight fit the {l2_label} L2"
            sentences.append(f"{held}, which fits the {l2_label} L2, so rows in flight do not explain the "
                             f"extra bytes: look for data read by several programs, a workspace, or partial sectors.")
    return sentences


def diagnose(reading: dict, cost: Cost | None = None, shape=None, itemsize: int | None = None,
             ceilings: Ceilings | None = None, device: str | None = None) -> Diagnosis:
    """Diagnose one kernel reading (Nsight Compute's, or the compiled kernel's resources).

    cost: the op's cost model at this shape (minimum bytes); shape and itemsize: the input's, for the
    rows-in-flight test; ceilings: measured copy bandwidth, to judge DRAM throughput; device: its name,
    for SMs, L2 size and the architecture's limits (default: the ceilings' device, else H200).
    """
    device = device or (ceilings.device if ceilings else "NVIDIA H200")
    spec = lookup_spec(device)
    try:
        arch = limits_for(device).arch
    except ValueError:
        arch = "sm_90"
    sms = spec.sms if spec else None
    l2_bytes = spec.l2_MB * 2**20 if spec else None  # cache sizes are quoted in MiB
    l2_label = f"{spec.l2_MB:g} MiB" if spec else None
    figures: dict = {}
    occ = reading_occupancy(reading, arch)
    if occ is not None:
        figures.update(blocks_per_sm=occ.blocks_per_sm, theoretical_occupancy_pct=occ.theoretical_pct,
                       occupancy_limited_by=occ.limited_by)

    sentences = []
    if cost is not None:
        sentences += _traffic_sentences(reading, cost, shape, itemsize, occ, sms, l2_bytes, l2_label, figures)
    dram, sm_pct = reading.get("dram_throughput_pct"), reading.get("sm_throughput_pct")
    # only a measured copy says how much of the datasheet peak is reachable (the datasheet fallback is the peak)
    copy_pct = 100 * ceilings.copy_GBps / spec.mem_GBps if ceilings and spec and ceilings.source != "datasheet" else None
    if dram is not None:
        ref = f" (the measured copy reaches {copy_pct:.0f}% of the {spec.mem_GBps:.0f} GB/s datasheet peak)" \
            if copy_pct else ""
        sm_text = f"; SM throughput {sm_pct:.1f}%" if sm_pct is not None else ""
        sentences.append(f"DRAM throughput {dram:.1f}% of peak{ref}{sm_text}.")
    if occ is not None:
        sentences.append(_occupancy_sentence(reading, occ, arch))
    spills = reading.get("n_spills") or 0
    if spills:
        sentences.append(f"{spills:.0f} registers per thread spill to local memory: extra traffic and latency.")
    grid = reading.get("grid_size")
    if grid and occ and sms and grid < sms * occ.blocks_per_sm:
        slots = sms * occ.blocks_per_sm
        figures["grid_fill_pct"] = 100 * grid / slots
        sentences.append(f"Its grid of {grid:.0f} programs fills {100 * grid / slots:.0f}% of the {slots} "
                         f"resident slots ({sms} SMs x {occ.blocks_per_sm}).")

    verdict, advice = _verdict(reading, cost, ceilings, figures, occ, dram, sm_pct, copy_pct, arch)
    sentences.append(advice)
    return Diagnosis(sentences, verdict, figures)


def _verdict(reading, cost, ceilings, figures, occ, dram, sm_pct, copy_pct, arch) -> tuple[str, str]:
    duration = reading.get("duration_us")
    achieved = reading.get("achieved_occupancy_pct")
    extra = figures.get("extra_bytes_pct")
    if duration is not None and duration * 1e-6 < LAUNCH_BOUND_S:
        return "launch", (f"Verdict: launch/latency-bound: at {duration:.1f} µs fixed costs dominate; "
                          f"capture it in a CUDA graph or fuse it with its neighbours.")
    if cost is not None and ceilings is not None and cost.bound(ceilings) == "compute":
        busy = f" with the SMs {sm_pct:.0f}% busy" if sm_pct is not None else ""
        return "compute", (f"Verdict: compute-bound{busy}: the tile shapes, pipeline stages and tensor-core "
                           f"use decide the speed, not DRAM.")
    if dram is None:
        occ_text = f" (theoretical occupancy {occ.theoretical_pct:.0f}%)" if occ else ""
        return "resources", (f"Verdict: compiled resources only{occ_text}; Nsight Compute (ncu) gives the DRAM "
                             f"bytes and throughput that say whether it is traffic- or latency-bound.")
    if extra is not None and extra > EXTRA_BYTES_PCT:
        fix = ("keep fewer rows in flight (fewer resident programs, or rows split across programs) or avoid "
               "the second pass" if figures.get("l2_overflow") else "keep the data on chip between passes")
        if (reading.get("kernels") or 1) > 1:
            fix = "fuse the kernels so intermediates stay on chip"
        also = ""
        if copy_pct and dram < NEAR_COPY * copy_pct and achieved is not None and achieved < LOW_OCCUPANCY_PCT:
            also = f" DRAM is also busy only {dram:.0f}% at {achieved:.0f}% occupancy: latency adds to it."
        return "re-reads", f"Verdict: traffic-bound: it moves {extra:.0f}% more bytes than needed; {fix}.{also}"
    if copy_pct and dram >= NEAR_COPY * copy_pct:
        return "at-ceiling", ("Verdict: at the memory ceiling: DRAM is about as busy as a plain copy gets it; "
                              "only moving fewer bytes makes it faster.")
    if sm_pct is not None and sm_pct >= SM_BOUND_PCT and sm_pct > dram:
        return "instructions", (f"Verdict: instruction-bound: the SMs are {sm_pct:.0f}% busy while DRAM is "
                                f"{dram:.0f}%; fewer instructions per byte (cheaper maths, wider loads).")
    if achieved is not None and achieved < LOW_OCCUPANCY_PCT:
        regs = reading.get("registers_per_thread", reading.get("n_regs"))
        more = ""
        if occ and "registers" in occ.limited_by and regs is not None:
            fit = max_regs_for(occ.blocks_per_sm + 1, occ.warps_per_block * 32, limits_for(arch))
            more = f" (at most {fit} registers per thread instead of {regs:.0f})"
        return "latency", (f"Verdict: latency-bound: the bytes are the minimum but DRAM is busy only {dram:.0f}% "
                           f"of the time; at {achieved:.0f}% occupancy too few loads are in flight to cover DRAM "
                           f"latency: more resident programs{more} or more loads in flight per program.")
    return "unknown", (f"Verdict: DRAM {dram:.0f}% busy with the minimum bytes and "
                       f"{'' if achieved is None else f'{achieved:.0f}% '}occupancy; the stall reasons of a full "
                       f"Nsight Compute report (ncu --set full) tell the rest.")
