r"""Experiment: tile widths that fit the SMs' waves (issue 4): the Gluon GEMM's cooperative 128 x 192 and
128 x 160 variants against its power-of-two ones and cuBLAS, at M = 512.

Why: rooftop.matmul reaches 0.93x cuBLAS at 512 x 10240 x 8192 and 0.89x at 512 x 6144 x 4096 on the H200
(132 SMs; the target is 0.95x). Their tiles split into waves badly: at N = 6144, 4 x 48 = 192 tiles of
128 x 128 (1.45 waves) or 96 of 128 x 256 (73% of one); at N = 10240, 320 or 160. 128 x 192 makes 4 x 32 = 128
tiles at N = 6144 (97% of a wave), 128 x 160 4 x 64 = 256 at N = 10240 (1.94 waves, 97%).

What: each variant of ops/matmul_sm90.py (the 192 / 160 ones: two accumulators a consumer, 128 + 64 / 32
columns) launched through its WarpSpecializedPlan, and torch.matmul (cuBLAS), timed as rooftop's tuner times
(_autotune.time_ms: one call in a CUDA graph, replayed, L2 flushed between replays), each result first checked
against an fp32 matmul (rel. err. < 1e-2). Shapes: M = 512 with Llama-style N x K, and 2048 x 6144 x 4096 as a
control (every width fills 97% there); b as nn.Linear's w.t() (K-major), for the first two also row-major
[K, N]. The data-parallel variants everywhere, stream-K where the tuner times it; `tuned` marks the variants
the tuner times (matmul_sm90.timed: the 192 / 160 widths only where they fill the waves to 95% and 128 / 256
do not).

Prediction: 128 x 192 at 512 x 6144 x 4096 and 128 x 160 at 512 x 10240 x 8192 beat every power-of-two
variant (stream-K included) by several percent and reach ~0.95x cuBLAS; elsewhere they win nothing (512 x 4096:
88 / 104 tiles on 132 SMs; 512 x 28672: 91% against 128 x 128's 97%).

Offline sm_90 compile (Triton 3.6, --compile-only): no spills (STACK 0) with no epilogue, bias + SiLU + a
residual, b N-major or K-major; REG 168 at launch, setmaxnreg 232 per consumer and 40 for the loader; shared
memory 213224-213272 bytes (128 x 192, 4 stages: ring and staging 212992) and 225536-225592 (128 x 160, 5 stages:
225280), of 232448. Each k-step loop holds 8 HGMMAs (4 of 64x128x16 and 4 of 64x64x16 or 64x32x16), one
`WARPGROUP.DEPBAR.LE gsb0, 0x2` (two wgmma groups a k-step), the ready wait, the empty arrive and two
warp-group bar.syncs. TMA boxes: 128 x 192 b [64, 64] (128-byte swizzle) either way round, output [64, 64];
128 x 160 b [64, 32] N-major (64-byte swizzle: 320-byte rows take no 128-byte one) or [32, 64] K-major,
output [64, 32]: 5 (7) TMA loads a stage and 6 (10) stores a tile.

Usage:
  .venv/bin/python benchmarks/exp_matmul_wave.py --compile-only   # no GPU: the 192 / 160 variants' sm_90 figures
  # H200 (under 90 s: no new shape past BUDGET_S, a watchdog ends a hang at WATCHDOG_S with exit 124, the
  # results so far saved): a table, and OUT_DIR/exp-matmul-wave.json
  PYTHONPATH=src timeout 120 python benchmarks/exp_matmul_wave.py OUT_DIR
"""
from __future__ import annotations

import json
import os
import threading
import time

import torch

from exp_gluon_matmul import compile_only as compile_variants
from gluon_sm90 import main, results, wait_or_exit
from rooftop.ops import _autotune
from rooftop.ops.matmul_sm90 import VARIANTS, WarpSpecializedPlan, timed

# M, N, K, b's layouts: "k" w.t() of a row-major [N, K] w (nn.Linear's), "n" row-major [K, N]
PROBLEMS = ((512, 6144, 4096, "kn"), (512, 10240, 8192, "kn"), (512, 4096, 4096, "k"), (512, 28672, 4096, "k"),
            (512, 4096, 14336, "k"), (2048, 6144, 4096, "k"))
BUDGET_S = 60  # no new problem starts after this many seconds (the first one's compiles take most of them)
WATCHDOG_S = 80  # whatever hangs: save the rows and exit 124


def compile_only() -> None:
    compile_variants([v for v in VARIANTS if v.wave_fit])


def measure(out_dir: str) -> None:
    start = time.monotonic()
    rows, save = results(out_dir, "exp-matmul-wave.json")

    def watchdog() -> None:
        print(f"WATCHDOG: not done after {WATCHDOG_S} s; exiting", flush=True)
        save()
        os._exit(124)

    timer = threading.Timer(WATCHDOG_S, watchdog)
    timer.daemon = True
    timer.start()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference in full precision
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    for M, N, K, layouts in PROBLEMS:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        for layout in layouts:
            b_name = "w.t()" if layout == "k" else "[K, N]"
            problem = f"{M}x{N}x{K} b {b_name}"
            if time.monotonic() - start > BUDGET_S:
                print(f"{problem}: skipped (past the {BUDGET_S} s budget)", flush=True)
                continue
            b = (torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if layout == "k"
                 else torch.randn(K, N, device="cuda", dtype=torch.bfloat16))
            ref = a.float() @ b.float()

            def record(provider: str, gemm, tuned=None) -> None:
                """gemm() -> the product: checked against ref (its first launch under a 10 s watchdog), then
                timed."""
                row = dict(shape=[M, N, K], b=b_name, provider=provider, tuned=tuned)
                rows.append(row)
                try:
                    c = gemm()  # compiles (host side), then launches
                    wait_or_exit(10.0, f"{provider} at {problem}", save)
                    row["rel_err"] = float((c.float() - ref).norm() / ref.norm())
                    if row["rel_err"] < 1e-2:
                        row["ms"] = _autotune.time_ms(gemm)
                        row["tflops"] = 2 * M * N * K / row["ms"] / 1e9
                    else:
                        row["error"] = "wrong result"
                except Exception as e:  # a provider that fails is recorded, not fatal
                    row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                print(json.dumps(row), flush=True)
                save()

            record("cublas", lambda: torch.matmul(a, b))
            for v in VARIANTS:
                tuned = timed(v, M, N, num_sms)
                if v.stream_k and not tuned:  # elsewhere its partials cost and buy nothing
                    continue
                out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
                plan = WarpSpecializedPlan(v, a, b, layout == "k", out, None, None, None, num_sms)

                def gluon(plan=plan, out=out) -> torch.Tensor:
                    plan(a, b, out, None, None)
                    return out

                record(v.name, gluon, tuned)
    timer.cancel()
    _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    """Per problem: cuBLAS's TFLOP/s, then each variant's and its ratio to cuBLAS (same run), fastest first, and
    those that failed; and the best power-of-two variant against the best wave-fitting one."""
    problems = list(dict.fromkeys((tuple(r["shape"]), r["b"]) for r in rows))
    wave_fit = {v.name: v.wave_fit for v in VARIANTS}
    for shape, b in problems:
        cells = [r for r in rows if (tuple(r["shape"]), r["b"]) == (shape, b) and r.get("tflops")]
        cublas = next((r["tflops"] for r in cells if r["provider"] == "cublas"), None)
        print(f"\n{'x'.join(map(str, shape))} b {b}: cuBLAS {cublas or float('nan'):.0f} TF/s")
        best = {}
        for r in sorted(cells, key=lambda r: -r["tflops"]):
            if r["provider"] == "cublas":
                continue
            best.setdefault(wave_fit[r["provider"]], r)
            ratio = f"{r['tflops'] / cublas:5.3f}x" if cublas else "-"
            print(f"  {r['provider']:34} {r['tflops']:5.0f} TF/s {ratio}{'  tuned' if r['tuned'] else ''}")
        for r in rows:
            if (tuple(r["shape"]), r["b"]) == (shape, b) and "error" in r:
                print(f"  {r['provider']:34} {r['error'][:80]}")
        if cublas and len(best) == 2:
            print(f"  best power of two {best[False]['provider']} {best[False]['tflops'] / cublas:5.3f}x, best wave "
                  f"fit {best[True]['provider']} {best[True]['tflops'] / cublas:5.3f}x cuBLAS")


if __name__ == "__main__":
    main("matmul-wave", compile_only, measure)
