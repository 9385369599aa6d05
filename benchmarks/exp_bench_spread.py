"""Experiment (session 47): why rms_norm_fp8 in parts reads far slower by do_bench than by graph replay in some runs
(64.2 against 86.0% of copy at 65536 in call f, 69.4 against 86.9 at 131072 in session 46's call f), on the H200.

do_bench (the results' timing: triton.testing.do_bench, median) zeroes a 256 MB buffer before each call to flush L2;
a persistent kernel whose programs a row's parts wait on each other may start while the flush's last blocks still hold
SMs, and then wait for the late programs. Per case: do_bench's every time (quantiles 10 / 50 / 90), the same loop
with a synchronize between the flush and the call ("sync": no overlap with the flush), and graph replay.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_bench_spread.py OUT_DIR  (a table last, exp-bench-spread.json)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton.testing

from exp_norm_reload import ELEMENTS
from exp_row_tail import op_call
from rooftop.ops import _autotune

CASES = [("rms_norm_fp8", 65536), ("rms_norm_fp8", 131072), ("rms_norm_fp8", 32768), ("rms_norm", 131072),
         ("softmax", 131072), ("layer_norm", 131072), ("add_rms_norm_fp8", 65536)]


def quantiles(times: list[float]) -> list[float]:
    ordered = sorted(times)
    return [ordered[int(q * (len(ordered) - 1))] for q in (0.1, 0.5, 0.9)]


def synced_us(fn, reps: int = 50) -> list[float]:
    """fn's times (us) each after an L2 flush and a synchronize (no overlap with the flush)."""
    flush = torch.empty(1 << 26, dtype=torch.int32, device="cuda")
    times = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for op, N in CASES:
        call, _, nbytes = op_call(op, ELEMENTS // N, N)
        call()
        bench = [t * 1e3 for t in triton.testing.do_bench(call, warmup=25, rep=100, return_mode="all")]
        row = dict(op=op, N=N, nbytes=nbytes, do_bench=quantiles(bench), sync=quantiles(synced_us(call)),
                   graph=_autotune.time_ms(call) * 1e3, all_do_bench=bench)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "all_do_bench"}), flush=True)
        (out / "exp-bench-spread.json").write_text(json.dumps(rows, indent=1))
        del call
        torch.cuda.empty_cache()
    print("\nus: do_bench p10 / p50 / p90 | sync p10 / p50 / p90 | graph")
    for r in rows:
        print(f"{r['op']:17s} {r['N']:6d} " + " / ".join(f"{t:6.1f}" for t in r["do_bench"]) + " | "
              + " / ".join(f"{t:6.1f}" for t in r["sync"]) + f" | {r['graph']:6.1f}")


if __name__ == "__main__":
    main()
