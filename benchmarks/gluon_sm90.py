"""What the Gluon experiment scripts (benchmarks/exp_gluon_*.py) share: the offline sm_90 compile and the
readout of its cubin (resources, setmaxnreg values, the loops of the SASS), the pieces of the mbarrier
protocol models (MBarrier, step), and the GPU run's watchdog.
Only the watchdog needs a GPU."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import triton

BIN = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"


def compile_sm90(kernel, signature: dict, constexprs: dict, num_warps: int = 4, attrs: dict | None = None):
    """A Gluon kernel compiled for sm_90 (Hopper) by Triton, offline; attrs: argument attributes such as
    the 16-byte divisibility a launch specialises on."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from rooftop.ops._support import dropping_marked_barriers
    with dropping_marked_barriers():  # as GluonLaunch compiles
        return triton.compile(GluonASTSource(kernel, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32),
                              options=dict(num_warps=num_warps))


@dataclass
class Cubin:
    resources: str  # cuobjdump's "REG:n STACK:n" (the launch's registers; setmaxnreg moves each warp group)
    sass: str
    maxnreg: list[int]  # the setmaxnreg values of the partitions
    bare_cta_barriers: int  # BAR.SYNC 0x0 without a thread count: after a warp_specialize fork, a deadlock
    local_memory_ops: int  # LDL / STL: spills


def read_cubin(compiled) -> Cubin:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        usage, sass = [subprocess.run([BIN + "cuobjdump", flag, f.name], capture_output=True, text=True,
                                      check=True).stdout for flag in ("--dump-resource-usage", "-sass")]
    return Cubin(re.search(r"REG:\d+ STACK:\d+", usage).group(0), sass,
                 sorted({int(r, 16) for r in re.findall(r"USETMAXREG\.\S+ (?:UP\d+, )?(0x[0-9a-f]+)", sass)}),
                 len(re.findall(r"BAR\.SYNC(?:\.DEFER_BLOCKING)? 0x0\s*;", sass)),
                 len(re.findall(r"\b(?:LDL|STL)\b", sass)))


def sass_loops(sass: str, keep: Callable[[list[str]], bool]) -> list[tuple[int, int, list[str]]]:
    """(start, end, body) of each loop of the SASS (a predicated backward branch) whose body `keep`
    accepts, in address order of the branch."""
    code = [(int(addr, 16), text.strip()) for addr, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    loops = []
    for addr, text in code:
        target = re.match(r"@!?U?P\d+ BRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < addr:
            start = int(target.group(1), 16)
            body = [t for a, t in code if start <= a <= addr]
            if keep(body):
                loops.append((start, addr, body))
    return loops


def issues_wgmma(body: list[str]) -> bool:
    return any(t.startswith("HGMMA") for t in body)


class MBarrier:
    """An mbarrier in the protocol models, as the kernels use it: `count` arrivals (plus any expected TMA
    bytes, here one completion) end a phase; wait(parity) passes once the phase of that parity has completed,
    i.e. while the current phase's parity differs (a fresh barrier passes wait(1) at once)."""

    def __init__(self, count: int):
        self.count, self.pending, self.phase = count, count, 0

    def arrive(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passes(self, parity: int) -> bool:
        return (self.phase & 1) != parity


def step(actor, actors: list, spinning: set) -> None:
    """One move of an actor (a generator) of the experiments' mbarrier protocol models: it yields True when it
    progressed (every spinning actor may now pass), False when a wait did not pass (it spins); a finished
    actor leaves `actors`. A model is deadlocked when every actor spins and nothing is in flight."""
    try:
        if next(actor):
            spinning.clear()
        else:
            spinning.add(actor)
    except StopIteration:
        actors.remove(actor)
        spinning.discard(actor)


def results(out_dir: str, name: str) -> tuple[list[dict], Callable[[], None]]:
    """The rows a run measures, and save(), which writes them to OUT_DIR/name as JSON (call it after each
    row: a watchdog exit keeps what was measured)."""
    rows: list[dict] = []
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return rows, lambda: Path(out_dir, name).write_text(json.dumps(rows, indent=1))


def wait_or_exit(limit_s: float, what: str, save: Callable[[], None]) -> None:
    """Wait for the work launched so far, at most limit_s: a deadlocked kernel would hang synchronize()
    for ever, so poll an event; past the limit save what was measured and end the process (the driver
    tears the context and the kernel down with it)."""
    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + limit_s
    while not done.query():
        if time.monotonic() > deadline:
            print(f"WATCHDOG: {what} did not finish within {limit_s} s (deadlock?); exiting", flush=True)
            save()
            os._exit(124)
        time.sleep(0.01)


def main(default_out: str, compile_only: Callable[[], None], measure: Callable[[str], None]) -> None:
    """A plain experiment's command line: OUT_DIR (on the GPU: measure) or --compile-only (no GPU)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default=default_out)
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args()
    sys.exit(compile_only() if args.compile_only else measure(args.out))
