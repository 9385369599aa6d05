"""Attention launch configurations on the GPU: every candidate of rooftop's list, beside SDPA's flash and
cuDNN backends, in one process.

Cases: head dim D in (64, 128, 256), causal and not, S in (512, 2048, 8192, 16384) with B * S = 16384
tokens, H = 16 heads (8 at D = 256), bf16. Per case: SDPA flash and cuDNN, then each candidate of
rooftop.ops.attention.attention_candidates, launched through a prepared plan (what a repeated call
runs) and timed with triton.testing.do_bench (median, L2 flushed). Every output is checked against SDPA
(NaN, relative error); a config that fails (out of resources, compile error, NaN, mismatch) is recorded
with the reason and the run goes on. Past the time budget the remaining configs are skipped (recorded
as such); SDPA still runs. Then, per (D, causal) at S = 8192, the best config with descriptors made
on the device instead of the host, and the host cost of one call (plan path, slow path, SDPA flash).
A config that corrupts the CUDA context (illegal address) makes every later run fail, each recorded.

Compilation (a few seconds per config) would take most of the time: first, worker processes compile
every candidate on tiny inputs of the same Triton specialisation, and the timed loop finds them in
Triton's disk cache.

Writes OUT_DIR/exp-attention.json and prints a table last: per case the best config, its TFLOP/s, the
untuned default's, and the ratios against flash and cuDNN.
Usage: PYTHONPATH=src python benchmarks/exp_attention.py OUT_DIR [--quick] [--wide] [--budget SECONDS] [--jobs N]
  --quick   S in (2048, 8192) only
  --wide    the whole pruned space, not just the first MAX_CANDIDATES of each list (takes longer)
  --jobs    compiling processes (default 8; 0: compile in the timed loop)
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import multiprocessing
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

import rooftop.ops.attention as attention_mod
from rooftop.bench.timing import bench_ms, python_launch_us
from rooftop.ops.attention import (attention, attention_candidates, attention_cost, attention_reference,
                                   prepared_attention)

TOKENS = 16384
HEAD_DIMS = (64, 128, 256)
LENGTHS = (512, 2048, 8192, 16384)
QUICK_LENGTHS = (2048, 8192)
DESCRIPTOR_LENGTH = 8192  # where host- and device-made descriptors are compared
MAX_REL_ERR = 2e-2  # against SDPA flash, both bf16 (each ~4e-3 from the exact result)
SDPA_BACKENDS = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}


def heads(D: int) -> int:
    return 16 if D < 256 else 8


def tiny_inputs(D: int) -> tuple[torch.Tensor, ...]:
    """B=1, S=128 inputs that Triton specialises as it does the cases' (sizes and strides multiples of
    16, H as in the cases): a kernel compiled for them is the cases' kernel."""
    return tuple(torch.randn(1, heads(D), 128, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))


def compile_candidate(D: int, causal: bool, index: int, limit) -> None:
    """Worker: compile candidate `index` of (D, causal); errors are left to the timed loop to record."""
    try:
        q, k, v = tiny_inputs(D)
        prepared_attention(q, k, v, causal, attention_candidates(q, k, v, causal, limit)[index])
    except Exception:
        pass


def precompile(jobs: int, limit) -> float:
    """Compile every candidate in `jobs` processes; returns the seconds it took."""
    start = time.perf_counter()
    tasks = [(D, causal, i, limit) for D in HEAD_DIMS for causal in (False, True)
             for i in range(len(attention_candidates(*tiny_inputs(D), causal, limit)))]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        pool.starmap(compile_candidate, tasks)
    return time.perf_counter() - start


def sdpa(q, k, v, causal: bool, backend) -> torch.Tensor:
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def error_text(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).strip()[:300]}"


def timed(fn, flops: int) -> dict:
    ms = bench_ms(fn, warmup_ms=10, rep_ms=40)
    return {"ms": ms, "TFLOPs": flops / (ms * 1e-3) / 1e12}


def run_config(q, k, v, causal: bool, config, ref: torch.Tensor, flops: int) -> dict:
    """One candidate on one case: prepared (compiled), checked against SDPA, timed."""
    row = {"config": dataclasses.asdict(config)}
    try:
        run = prepared_attention(q, k, v, causal, config)
        out = run()
        if out.isnan().any():
            row["error"] = "NaN in the output"
            return row
        row["rel_err_vs_sdpa"] = rel_err(out, ref)
        if row["rel_err_vs_sdpa"] > MAX_REL_ERR:
            row["error"] = f"mismatch: relative error {row['rel_err_vs_sdpa']:.3g} against SDPA"
            return row
        row.update(timed(run, flops))
    except Exception as err:  # out of resources, compile errors: recorded, the next config runs
        row["error"] = error_text(err)
    return row


def run_case(D: int, causal: bool, S: int, limit, deadline: float) -> dict:
    H = heads(D)
    B = TOKENS // S
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flops = attention_cost((B, H, S, D), torch.bfloat16, causal).flops
    case = {"D": D, "causal": causal, "S": S, "B": B, "H": H, "flops": flops, "configs": []}
    ref = None
    for name, backend in SDPA_BACKENDS.items():
        try:
            out = sdpa(q, k, v, causal, backend)
            ref = out if ref is None else ref
            case[name] = timed(lambda: sdpa(q, k, v, causal, backend), flops)
        except Exception as err:  # backend not available for this shape or build
            case[name] = {"error": error_text(err)}
    if ref is None:  # no SDPA backend ran: rooftop's float64 reference (chunked: bounded memory)
        ref = attention_reference(q, k, v, causal)
    for config in attention_candidates(q, k, v, causal, limit):
        if time.perf_counter() > deadline:
            case["configs"].append({"config": dataclasses.asdict(config), "skipped": "time budget"})
            continue
        row = run_config(q, k, v, causal, config, ref, flops)
        case["configs"].append(row)
        print(f"  D={D} causal={int(causal)} S={S} {tuple(row['config'].values())}: "
              + (f"{row['TFLOPs']:.0f} TFLOP/s" if "TFLOPs" in row else row.get("error", "")), flush=True)
    timed_rows = [r for r in case["configs"] if "TFLOPs" in r]
    if timed_rows:
        best = max(timed_rows, key=lambda r: r["TFLOPs"])
        case["best"] = {"config": best["config"], "TFLOPs": best["TFLOPs"],
                        "default_TFLOPs": case["configs"][0].get("TFLOPs")}
        for name in SDPA_BACKENDS:
            if "TFLOPs" in case[name]:
                case["best"]["vs_" + name] = best["TFLOPs"] / case[name]["TFLOPs"]
    return case


def device_descriptors(cases: list[dict]) -> list[dict]:
    """The best config of each (D, causal) at S = DESCRIPTOR_LENGTH with its descriptors made on the
    device (as varlen calls do), against host-made ones: what a per-call host descriptor saves or costs."""
    rows = []
    for case in cases:
        if case["S"] != DESCRIPTOR_LENGTH or "best" not in case:
            continue
        B, H, S, D, causal = case["B"], case["H"], case["S"], case["D"], case["causal"]
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        config = attention_mod.AttentionConfig(**case["best"]["config"])
        row = {"D": D, "causal": causal, "S": S, "config": case["best"]["config"]}
        try:
            host_run = prepared_attention(q, k, v, causal, config)
            row["host_TFLOPs"] = timed(host_run, case["flops"])["TFLOPs"]
            attention_mod.HOST_DESCRIPTORS = False
            device_run = prepared_attention(q, k, v, causal, config)
            row["rel_err_vs_host"] = rel_err(device_run(), host_run())
            row["device_TFLOPs"] = timed(device_run, case["flops"])["TFLOPs"]
        except Exception as err:
            row["error"] = error_text(err)
        finally:
            attention_mod.HOST_DESCRIPTORS = True
        rows.append(row)
    return rows


def host_costs() -> dict:
    """Microseconds of host time per call at a size the GPU finishes in a few microseconds (B=1, H=16,
    S=256, D=128, causal): rooftop's repeated call (its plan), its slow path (plans dropped before each
    call; the configuration is remembered), SDPA flash."""
    q, k, v = (torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    attention(q, k, v, True)  # tunes this bucket once

    def slow_call():
        attention_mod._plans.clear()
        attention(q, k, v, True)

    return {"shape": [1, 16, 256, 128], "causal": True,
            "rooftop_plan_us": python_launch_us(lambda: attention(q, k, v, True), calls=300),
            "rooftop_slow_path_us": python_launch_us(slow_call, calls=100),
            "sdpa_flash_us": python_launch_us(lambda: sdpa(q, k, v, True, SDPBackend.FLASH_ATTENTION), calls=300)}


def num(x, width: int, digits: int = 0) -> str:
    return f"{x:{width}.{digits}f}" if isinstance(x, (int, float)) else "-".rjust(width)


def table(cases: list[dict]) -> str:
    lines = [f"{'D':>4} {'causal':>6} {'S':>6}  {'best (BM, BN, warps, stages)':<30} {'TFLOP/s':>8} "
             f"{'default':>8} {'flash':>7} {'cuDNN':>7} {'x flash':>8} {'x cuDNN':>8}"]
    for c in cases:
        best = c.get("best", {})
        cfg = str(tuple(best["config"].values())) if best else "none ran"
        lines.append(f"{c['D']:>4} {int(c['causal']):>6} {c['S']:>6}  {cfg:<30} {num(best.get('TFLOPs'), 8)} "
                     f"{num(best.get('default_TFLOPs'), 8)} {num(c['sdpa_flash'].get('TFLOPs'), 7)} "
                     f"{num(c['sdpa_cudnn'].get('TFLOPs'), 7)} {num(best.get('vs_sdpa_flash'), 8, 2)} "
                     f"{num(best.get('vs_sdpa_cudnn'), 8, 2)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--quick", action="store_true", help="S in (2048, 8192) only")
    parser.add_argument("--wide", action="store_true", help="time the whole pruned space of each list")
    parser.add_argument("--budget", type=float, default=140.0,
                        help="seconds after which remaining configs are skipped (default 140)")
    parser.add_argument("--jobs", type=int, default=8, help="compiling processes (default 8; 0: none)")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / "exp-attention.json"
    start = time.perf_counter()
    deadline = start + args.budget
    result = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
              "torch": torch.__version__, "triton": triton.__version__, "tokens": TOKENS, "dtype": "bfloat16",
              "wide": args.wide, "budget_s": args.budget, "cases": []}
    limit = None if args.wide else attention_mod.MAX_CANDIDATES
    try:
        if args.jobs > 0:
            try:
                result["precompile_s"] = precompile(args.jobs, limit)
                print(f"compiled the candidates in {result['precompile_s']:.0f} s", flush=True)
            except Exception as err:  # the timed loop compiles what is missing
                result["precompile_error"] = error_text(err)
        for D in HEAD_DIMS:
            for causal in (False, True):
                for S in QUICK_LENGTHS if args.quick else LENGTHS:
                    result["cases"].append(run_case(D, causal, S, limit, deadline))
        result["device_descriptors"] = device_descriptors(result["cases"])
        try:
            result["host_us"] = host_costs()
        except Exception as err:
            result["host_us"] = {"error": error_text(err)}
    finally:
        result["elapsed_s"] = time.perf_counter() - start
        path.write_text(json.dumps(result, indent=1))
    for row in result["device_descriptors"]:
        print(f"D={row['D']} causal={int(row['causal'])} S={row['S']}: host descriptors "
              f"{num(row.get('host_TFLOPs'), 1)}, device descriptors {num(row.get('device_TFLOPs'), 1)} TFLOP/s"
              + (f" ({row['error']})" if "error" in row else ""))
    print("host us per call:", {k: round(v, 1) if isinstance(v, float) else v for k, v in result["host_us"].items()})
    print(f"wrote {path} ({result['elapsed_s']:.0f} s)")
    print(table(result["cases"]))


if __name__ == "__main__":
    main()
