"""Experiment: a warp-specialised Gluon softmax staging rows in shared memory, against rooftop's Triton softmax.

Why: on the H200 (bf16, M * N = 2^27) rooftop's Triton softmax reaches 94-98 % of a copy at N = 8K-16K but
79 / 81 / 75 / 66 % at N = 32768 / 65536 / 131072 / 262144 (ops/softmax.py): at 32768 a row sits in the
registers of one 32-warp program per SM that loads, reduces and stores in sequence, so nothing overlaps the
load; wider rows take a two-pass loop whose second pass re-reads the row from L2. A 16-bit row of 32768
(64 KB) or 65536 (128 KB) fits the SM's 227 KB of shared memory with room for the next row, so a TMA loader
can keep reading while the row in hand is reduced and written.

The kernel is ops/softmax_sm90.py's (its docstring: ring, mbarrier protocol, masking); this file runs its
variants. Run 1 (benchmarks/results/logs/h200-2026-12-01-s8/exp-gluon-softmax-run1.log) had one consumer
partition (8 or 4 warps) running pass 1 (online max / sum per 8-element group) and pass 2 (re-read from
shared memory, 16-byte stores) of each row in sequence: 86-89 % of copy at 16384-65536, 77 % at 8192,
issue- and latency-bound (~12.5 instructions an element over both passes on 1-2 warps a scheduler, a
barrier of the consumer warps per chunk). Run 2 (this file) tries:
- two consumer partitions (warp groups) taking the program's rows in turn, sharing the ring in row order:
  one's pass 2 overlaps the other's pass 1, and each scheduler holds 2-4 consumer warps. A "turn" mbarrier
  per consumer orders the pass 1s (a consumer starts a row once the other has waited for every chunk of
  the row before), which keeps every ring parity wait at most one phase away (--compile-only's model
  catches the stale wait without it);
- fewer instructions an element: pass 2 as exp2(x log2e - (max log2e + log2 sum)), one FFMA + one MUFU.EX2 an
  element (no multiply by 1 / sum), and bf16 widened from 32-bit words by a shift and a mask (1 instruction a
  value against 1.5): pass 1 6.1, pass 2 4.1 instructions an element against run 1's 6.6 and 5.9. The single
  consumer below (ws_*) has the same arithmetic, so that it isolates the second consumer;
- [1, 256] TMA boxes (32 a chunk; what non-contiguous rows and N % 8192 != 0 take) against one box a chunk;
- 8-warp consumers (setmaxnreg 104 / 120: 2 x 8 + 4 warps), and 4096-element chunks (finer release).
Widths past the ring (131072, 262144: more chunks than STAGES) are not taken by the kernel (run 1's
resident-chunk scheme reached 61-67 %, below rooftop's looped kernel); rooftop and torch are still timed.

Offline sm_90 compile (Triton 3.6, --compile-only): no spills (the [1, 256]-box loader stores 8 bytes to the
stack once, at its start); setmaxnreg 240 for each 4-warp consumer, 24 for the loader's warp group; shared
memory 213 KB (208 KB ring). Two 4-warp consumers, 8192-element chunks, bf16 or fp16: pass 1 loop 391
instructions a chunk and thread (8 LDS.128, 72 MUFU.EX2, 1 try-wait, 1 BAR.SYNC), 6.1 an element (7.25 with
the N % 8192 mask); pass 2 loop 260 (8 LDS.128, 64 MUFU.EX2, 8 STG.E.128, 2 BAR.SYNC, 1 arrive), 4.1 an element
(log_softmax 3.1; masked 4.3). Named barriers 0 and 2 (128 threads each) for the two consumers, 1 for the
fork / join. Loader: 1 UTMALDG a chunk (flat) or 32 (335 instructions a chunk on its one warp).

Prediction: at 32768 / 65536, two consumers should hide the latency that left run 1 at 85-89 %: 90 %+ of
copy; 16384 about 90 %; 8192 below rooftop's on-chip kernel (98 %), which keeps it.

Usage:
  .venv/bin/python benchmarks/exp_gluon_softmax.py --compile-only   # no GPU: sm_90 registers / spills / smem, SASS
  # H200: checks each variant against torch.softmax in fp32, then times the variants, rooftop.softmax as it
  # dispatches (the Gluon path at 16384 < N <= 65536), rooftop with the Gluon path off, torch.softmax and a
  # copy; each Gluon first launch runs under a 10 s watchdog (exit 124 on a deadlock, results so far saved)
  PYTHONPATH=src timeout 150 python benchmarks/exp_gluon_softmax.py OUT_DIR
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import torch

from gluon_sm90 import compile_sm90, main, read_cubin, results, sass_loops, wait_or_exit
from rooftop.ops import softmax as softmax_mod
from rooftop.ops import softmax_sm90
from rooftop.ops.softmax_sm90 import RING_LAYOUT, BOX_COLS, consumer_regs

TOTAL_ELEMS = 1 << 27
# 16392: one 8-element vector past two chunks, the masked path's worst case (a third chunk almost all padding)
WIDTHS = (8192, 16384, 16392, 32768, 65536, 131072, 262144)
SIMULATED_ROWS, SIMULATED_SEEDS = 6, 200  # the --compile-only model of the ring protocol


@dataclass(frozen=True)
class Variant:
    chunk: int  # elements per ring buffer
    stages: int  # ring buffers
    warps: int  # warps per consumer partition
    consumers: int  # consumer partitions taking rows in turn
    flat: bool = True  # one TMA box a chunk where the rows allow it; False: [1, 256] boxes always

    @property
    def name(self) -> str:
        return (f"{'pp2' if self.consumers == 2 else 'ws'}_c{self.chunk}_s{self.stages}_w{self.warps}"
                + ("" if self.flat else "_rowbox"))


VARIANTS = (
    Variant(8192, 13, 4, 1),   # one consumer, as run 1's ws_w4 (with this run's arithmetic)
    Variant(8192, 13, 4, 2),   # the library's: two 4-warp consumers in turn
    Variant(8192, 13, 4, 2, flat=False),  # the same with 32 [1, 256] boxes a chunk (non-contiguous rows, N % 8192)
    Variant(8192, 13, 8, 2),   # two 8-warp consumers (120 registers each)
    Variant(4096, 26, 4, 2),   # 8 KB chunks: releases at finer grain
)


def softmax_variant(x: torch.Tensor, v: Variant, num_sms: int) -> torch.Tensor:
    """softmax over the last dim of a [M, N] x by the Gluon kernel in variant v."""
    y = torch.empty_like(x)
    if not softmax_sm90.supports(x, y, v.chunk, v.stages):
        raise ValueError(f"{v.name} does not take N={x.shape[1]} ({-(-x.shape[1] // v.chunk)} chunks > {v.stages})")
    softmax_sm90.softmax_rows(x, y, False, num_sms, v.chunk, v.stages, v.consumers, v.warps, v.flat)
    return y


# ---------------------------------------------------------------------------------------------
# Offline check (no GPU)


class _MBarrier:
    """An mbarrier as the kernel uses it: `count` arrivals (plus any expected TMA bytes, here one
    completion) end a phase; wait(parity) passes once the phase of that parity has completed, i.e. while
    the current phase's parity differs (a fresh barrier passes wait(1) at once)."""

    def __init__(self, count: int):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passes(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def simulate_protocol(chunks: int, stages: int, consumers: int, rows: int, seed: int, turns: bool = True) -> None:
    """The kernel's ring protocol for one program, run under a random interleaving of the loader, the
    consumers and the TMA landings (in any order): raises on a deadlock, or when a consumer reads a buffer
    that does not hold the chunk it expects (a parity wait passed on a stale phase, or a buffer refilled
    before its release). Mirrors _loader and _consumer step by step (turns=False drops the turn barriers,
    which the model must catch); the actors yield True on progress, False while spinning on a barrier."""
    import random
    rng = random.Random(seed)
    ready, empty = [_MBarrier(1) for _ in range(stages)], [_MBarrier(1) for _ in range(stages)]
    turn = [_MBarrier(1) for _ in range(consumers)]
    ring: list = [None] * stages
    in_flight: list = []  # TMA copies issued, not landed: (buffer, chunk)

    def loader():
        for it in range(rows * chunks):
            buf = it % stages
            while not empty[buf].passes(((it // stages) & 1) ^ 1):
                yield False
            in_flight.append((buf, it))  # expect + copy: the landing completes ready[buf]'s phase
            yield True

    def read(it):
        if ring[it % stages] != it:
            raise AssertionError(f"chunk {it}: buffer {it % stages} holds chunk {ring[it % stages]}")

    def consumer(who):
        for k, row in enumerate(range(who, rows, consumers)):
            it = row * chunks
            if consumers > 1 and turns:
                while not turn[1 - who].passes((k + who + 1) & 1):
                    yield False
            for c in range(chunks):  # pass 1
                while not ready[(it + c) % stages].passes(((it + c) // stages) & 1):
                    yield False
                read(it + c)
                yield True
            if consumers > 1:
                turn[who].arrive()
            for c in range(chunks):  # pass 2
                read(it + c)
                empty[(it + c) % stages].arrive()
                yield True

    actors, spinning = [loader()] + [consumer(w) for w in range(consumers)], set()
    while actors:
        pick = rng.randrange(len(actors) + (1 if in_flight else 0))
        if pick == len(actors):
            buf, it = in_flight.pop(rng.randrange(len(in_flight)))
            ring[buf] = it
            ready[buf].arrive()
            spinning.clear()
            continue
        actor = actors[pick]
        try:
            if next(actor):
                spinning.clear()
            else:
                spinning.add(actor)
        except StopIteration:
            actors.remove(actor)
            spinning.discard(actor)
        if actors and not in_flight and len(spinning) == len(actors):
            raise AssertionError(f"deadlock: {chunks} chunks a row, {stages} stages, {consumers} consumers")


LOOP_COUNTS = {"UTMALDG": r"UTMALDG", "SYNCS.TRYWAIT": r"SYNCS\.PHASECHK", "SYNCS.ARRIVE": r"SYNCS\.ARRIVE",
               "LDS.128": r"LDS\.128", "LDG.E.128": r"LDG\.E\S*\.128", "MUFU.EX2": r"MUFU\.EX2",
               "STG.E.128": r"STG\.E\S*\.128", "SHFL": r"SHFL", "BAR.SYNC": r"BAR\.SYNC"}


def _loop_report(sass: str) -> list[str]:
    """One line per loop (a backward branch; not the 2-instruction mbarrier retry spins) that issues TMA
    loads or vector loads: its instruction count and the instructions above. For an innermost consumer
    loop also the instructions per element (a 16-byte load brings 8) and the issue bound they imply,
    4 schedulers x 32 lanes / (instructions per element) elements a clock per SM, against the 4 that
    4.2 TB/s needs (each pass is one such loop; a row takes both)."""
    loops = []
    for start, end, body in sass_loops(sass, lambda body: True):
        counts = {name: sum(bool(re.search(pattern, t)) for t in body) for name, pattern in LOOP_COUNTS.items()}
        if counts["UTMALDG"] or counts["LDS.128"] or counts["LDG.E.128"]:
            loops.append((start, end, len(body), counts))
    reports = []
    for start, end, size, counts in loops:
        line = f"loop {start:#x}-{end:#x} ({size} instr): " + ", ".join(f"{k} {n}" for k, n in counts.items() if n)
        vectors = counts["LDS.128"] + counts["LDG.E.128"]
        innermost = not any(start <= s and e <= end and (s, e) != (start, end) for s, e, _, _ in loops)
        if vectors and innermost:
            per_elem = size / (8 * vectors)
            line += f"; {per_elem:.2f} instr/element (issue bound {128 / per_elem:.1f} elements/clk/SM)"
        elif vectors:
            line += "; row loop"
        reports.append(line)
    return reports


def _compile(v: Variant, N: int, dtype: str = "bf16", log: bool = False, row_stride: int = 0):
    """sm_90 compile of variant v for [*, N] rows (row_stride: x's, N when 0), as the launch would make it."""
    chunks = -(-N // v.chunk)
    flat = v.flat and N % v.chunk == 0 and row_stride in (0, N)
    box = [v.chunk // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
    consts = dict(LOG=log, EVEN=N % v.chunk == 0, FLAT=flat, CHUNK=v.chunk, CHUNKS=chunks, STAGES=v.stages,
                  CONSUMERS=v.consumers, CONSUMER_REGS=consumer_regs(v.consumers, v.warps),
                  LOADER_REGS=softmax_sm90.LOADER_REGS)
    sig = dict(x_desc=f"tensordesc<{dtype}{box},{RING_LAYOUT!r}>", y_ptr=f"*{dtype}", M="i32", N8="i32",
               y_stride8="i32")
    sig.update({name: "constexpr" for name in consts})
    aligned = {(1,): [["tt.divisibility", 16]]}  # y 16-byte aligned, as the launcher specialises torch allocations
    return compile_sm90(softmax_sm90._softmax_kernel, sig, consts, v.warps, aligned), consts


def compile_only() -> None:
    """sm_90 compile of each variant and width: registers, spills (stack), shared memory, the setmaxnreg
    of each partition, and the loops of the SASS (loader: TMA loads and mbarrier ops; consumers: shared
    loads, EX2s, stores, barriers); and the ring protocol's model for each."""
    for bad in (dict(chunks=4, stages=3, consumers=1), dict(chunks=8, stages=13, consumers=2, turns=False)):
        try:  # the model must catch a deadlock (a row wider than the ring) and a stale parity wait (no turns)
            for seed in range(SIMULATED_SEEDS):
                simulate_protocol(rows=SIMULATED_ROWS, seed=seed, **bad)
            raise RuntimeError(f"the protocol model missed a fault: {bad}")
        except AssertionError as e:
            print(f"protocol model catches {bad}: {e}")

    cases = [(v, N, "bf16", False) for v in VARIANTS for N in WIDTHS if -(-N // v.chunk) <= v.stages]
    lib = VARIANTS[1]
    cases += [(lib, 32768, "bf16", True), (lib, 32768, "fp16", False), (lib, 65536 - 8, "bf16", False),
              (lib, 65536 - 8, "bf16", True)]
    for v, N, dtype, log in cases:
        compiled, consts = _compile(v, N, dtype, log)
        cubin = read_cubin(compiled)
        sass = cubin.sass
        bars = sorted(set(re.findall(r"BAR\.SYNC(?:\.DEFER_BLOCKING)? (\S+)", sass)))
        print(f"{v.name} N={N} {dtype}{' log' if log else ''} ({consts['CHUNKS']} chunks/row, EVEN={consts['EVEN']}, "
              f"FLAT={consts['FLAT']}): {cubin.resources} smem {compiled.metadata.shared}; setmaxnreg {cubin.maxnreg}; "
              f"named barriers {bars}", flush=True)
        for line in _loop_report(sass):
            print("   ", line)
        for seed in range(SIMULATED_SEEDS):
            simulate_protocol(consts["CHUNKS"], v.stages, v.consumers, SIMULATED_ROWS, seed)
    print(f"protocol model: {SIMULATED_SEEDS} random interleavings of {SIMULATED_ROWS} rows per case, no deadlock, "
          "every read saw its chunk")


# ---------------------------------------------------------------------------------------------
# GPU run


def _without_gluon(fn):
    """fn with softmax.py's Gluon path switched off: today's Triton kernels."""
    def run(t):
        softmax_mod.GLUON_ENABLED = False
        try:
            return fn(t)
        finally:
            softmax_mod.GLUON_ENABLED = True
    return run


def measure(out_dir: str) -> None:
    """Per width: each provider's result against torch.softmax in fp32, then its time (do_bench: median,
    L2 flushed between calls) as GB/s of 2 * M * N * 2 bytes and as % of a copy of x timed in the same run."""
    import rooftop
    from rooftop.bench.timing import bench_ms

    torch.manual_seed(0)
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-gluon-softmax.json")

    for N in WIDTHS:
        M = TOTAL_ELEMS // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.softmax(x.float(), -1)
        nbytes = 2 * M * N * x.element_size()
        copy_out = torch.empty_like(x)
        copy_ms = bench_ms(lambda: copy_out.copy_(x))
        rows.append(dict(N=N, M=M, provider="copy", ms=copy_ms, gbps=nbytes / copy_ms / 1e6))
        del copy_out

        def record(provider, fn, watchdog_s=None):
            row = dict(N=N, M=M, provider=provider)
            rows.append(row)
            try:
                y = fn(x)  # compiles (host side), then launches
                if watchdog_s:
                    wait_or_exit(watchdog_s, f"{provider} at N={N}", save)
                torch.cuda.synchronize()
                diff = y.float() - ref
                row["max_abs_err"] = float(diff.abs().max())
                row["rel_err"] = float(diff.norm() / ref.norm())
                del y, diff
                if row["max_abs_err"] < 1e-2 and row["rel_err"] < 1.5e-2:
                    row["ms"] = bench_ms(lambda: fn(x))
                    row["gbps"] = nbytes / row["ms"] / 1e6
                    row["pct_copy"] = 100 * copy_ms / row["ms"]
                else:
                    row["error"] = "wrong result"
            except Exception as e:  # a variant that fails is recorded, not fatal
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(json.dumps(row), flush=True)
            save()

        for v in VARIANTS:  # the new kernels first, each first launch under the watchdog
            if softmax_sm90.supports(x, x, v.chunk, v.stages):
                record(v.name, lambda t, v=v: softmax_variant(t, v, num_sms), 10.0)
        # the library as it dispatches (the Gluon path where it applies), then with the Gluon path off
        record("rooftop", lambda t: rooftop.softmax(t, -1), 10.0)
        record("rooftop_triton", _without_gluon(lambda t: rooftop.softmax(t, -1)))
        record("torch", lambda t: torch.softmax(t, -1))
        del x, ref
    save()
    _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    """GB/s (and % of the copy of the same run) per width and provider."""
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    print(f"\n{'N':>7} " + " ".join(f"{p:>24}" for p in providers))
    for N in WIDTHS:
        cells = {r["provider"]: r for r in rows if r["N"] == N}
        line = f"{N:>7} "
        for p in providers:
            r = cells.get(p, {})
            cell = "-" if "gbps" not in r else f"{r['gbps']:5.0f} GB/s" + (
                f" ({r['pct_copy']:5.1f}%)" if "pct_copy" in r else "")
            line += f"{cell:>24} "
        print(line)


if __name__ == "__main__":
    main("gluon-softmax", compile_only, measure)
