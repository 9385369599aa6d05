"""One GPU session's measurements, in one process: ceilings, the row-op sweep for every provider side
by side, decode-size launch costs, Nsight Compute readings; results in the DESIGN.md format.

Usage (on the GPU machine): PYTHONPATH=src python benchmarks/gpu_session.py OUT_DIR [--quick]
Prints a short table last; writes OUT_DIR/<device>-<date>-<family>.json (+ .csv).
"""
from __future__ import annotations

import argparse
import time

import torch
import triton

from rooftop import registry
from rooftop.bench.results import write_results
from rooftop.bench.sweep import decode_latency, run_sweep, speedups
from rooftop.bench.timing import python_launch_us
from rooftop.hardware import measure_ceilings
from rooftop.profile.ncu import find_ncu, profile_op

FAMILIES = {"softmax": ("softmax",), "rms_norm": ("add_rms_norm", "rms_norm")}
DECODE_SHAPES = [(m, n) for m in (1, 8, 64) for n in (4096, 8192)]
NCU_CASES = [("softmax", (32768, 4096), "rooftop"), ("softmax", (2048, 65536), "rooftop"),
             ("softmax", (512, 262144), "rooftop"), ("softmax", (2048, 65536), "compile"),
             ("add_rms_norm", (16384, 8192), "rooftop"), ("add_rms_norm", (512, 262144), "rooftop")]


@triton.jit
def _empty_kernel(x_ptr, n):
    pass


def host_calibration() -> dict:
    """What a launch costs on this host, to read the decode figures against."""
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    return {"torch_add_python_us": python_launch_us(lambda: x + x),
            "empty_triton_kernel_python_us": python_launch_us(lambda: _empty_kernel[(1,)](x, 1))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true", help="fewer sizes, no torch.compile sweep")
    args = parser.parse_args()
    start = time.time()
    device = torch.cuda.get_device_name()
    ceilings = measure_ceilings(refresh=True)
    ceil = {"copy_GBps": ceilings.copy_GBps, "bf16_mm_TFLOPs": ceilings.bf16_mm_TFLOPs}
    print(f"{device}: copy {ceilings.copy_GBps:.0f} GB/s, bf16 mm {ceilings.bf16_mm_TFLOPs:.0f} TFLOP/s", flush=True)

    ncu = []
    if find_ncu():
        for op, shape, provider in NCU_CASES:
            try:
                ncu.append(profile_op(op, shape, "bf16", provider))
            except Exception as e:
                print(f"ncu {op} {shape} {provider}: {e}")
    else:
        print("ncu not found: no Nsight Compute readings")

    decode = decode_latency("add_rms_norm", DECODE_SHAPES, torch.bfloat16)
    calibration = host_calibration()

    all_rows = {}
    for family, ops in FAMILIES.items():
        shapes = registry.row_sweep(widths=(1024, 8192, 65536, 262144)) if args.quick else None
        providers = ["rooftop", "eager", "liger"] if args.quick else None
        rows = run_sweep(ops, torch.bfloat16, ceilings, shapes, providers)
        all_rows[family] = rows
        extra = {"ncu": [n for n in ncu if n["op"] in ops]}
        if family == "rms_norm":
            extra["decode_us"] = decode
            extra["host_calibration_us"] = calibration
        path = write_results(args.out, family, rows, ceil, device, **extra)
        print(f"wrote {path}", flush=True)

    # the short table, last
    print(f"\n{device}, copy {ceilings.copy_GBps:.0f} GB/s; GB/s (% of copy) and rooftop's speed-up")
    for family, rows in all_rows.items():
        vs_compile, vs_eager = speedups(rows, "compile"), speedups(rows, "eager")
        for r in rows:
            if r["provider"] != "rooftop":
                continue
            key = (r["op"], tuple(r["shape"]))
            others = "  ".join(f"{o['provider']} {o['GBps']:.0f}" for o in rows
                               if o["provider"] != "rooftop" and (o["op"], tuple(o["shape"])) == key)
            print(f"{r['op']:13s} N={r['shape'][1]:>6d}  {r['GBps']:5.0f} ({r['roofline_pct']:4.1f}%)  "
                  f"x{vs_compile.get(key, float('nan')):.2f} compile  x{vs_eager.get(key, float('nan')):.2f} eager"
                  f"  | {others}  err {r['rel_err']:.1e}")
    for d in decode:
        print(f"decode {d['provider']:8s} {d['shape']}: graph {d['graph_us']:.2f} us, python {d['python_us']:.1f} us")
    print("host calibration:", {k: round(v, 1) for k, v in calibration.items()})
    for n in ncu:
        print(f"ncu {n['op']} {n['shape']} {n['provider']}: dram {n.get('dram_throughput_pct', 0):.0f}% "
              f"bytes {n['dram_bytes'] / 1e6:.0f} MB, occupancy {n.get('achieved_occupancy_pct', 0):.0f}% "
              f"(limit {n['occupancy_limited_by']}), regs {n.get('registers_per_thread', 0):.0f}, "
              f"{n['duration_us']:.0f} us")
    print(f"session took {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
