"""What a small call costs from Python, before and after the eager call plans (ops/_support.py `planned`).

1. The host's floors: torch's add, torch.empty, an empty Triton kernel by Triton's dispatch and by the
   library's direct launch (Launch.start).
2. Each planned op at a decode size: the public call (a replay after the first call) against its full
   path (the undecorated function: checks, choices, Triton's specialisation key; quant_matmul's own plan),
   microseconds a call back to back from Python, and the GPU time alone (graph replay).
3. The decode figures of the results files (issue 2): add_rms_norm and softmax at M in {1, 8, 64},
   N in {4096, 8192}, rooftop / eager / torch.compile, graph replay and from Python.
Writes OUT/host-path.json; prints the tables.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_host_path.py OUT [--no-decode]  (1 and 2 only)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton

import rooftop
from rooftop.bench.session import DECODE_SHAPES, host_calibration
from rooftop.bench.sweep import decode_latency
from rooftop.bench.timing import graph_replay_us, python_launch_us
from rooftop.ops import quant_matmul
from rooftop.ops._support import prepare
from rooftop.ops.rope import rotary_cos_sin


@triton.jit
def _empty_kernel(x_ptr, n):
    pass


def floors() -> dict:
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    entry = prepare(_empty_kernel, x, 1)
    out = host_calibration()
    out["torch_empty_python_us"] = python_launch_us(lambda: torch.empty((1, 4096), device="cuda",
                                                                        dtype=torch.bfloat16))
    out["empty_kernel_direct_launch_python_us"] = python_launch_us(lambda: entry.start((1,), x, 1))
    out["empty_kernel_direct_address_python_us"] = python_launch_us(lambda: entry.start((1,), x.data_ptr(), 1))
    return out


def _weight_tensors(qw) -> tuple:
    """quant_matmul's planned function's arguments after x: the weight's tensors, no bias, its format."""
    return qw.packed, qw.scales, qw.zeros, None, qw.bits, qw.group_size


def planned_calls() -> dict:
    """name -> (public op, args): decode-size calls of every planned op."""
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    x, res = torch.randn(1, 4096, **bf16), torch.randn(1, 4096, **bf16)
    w = torch.rand(4096, **bf16) + 0.5
    gate, up = torch.randn(1, 14336, **bf16), torch.randn(1, 14336, **bf16)
    wide = torch.randn(8, 8192, **bf16)
    q, k = torch.randn(1, 32, 1, 128, **bf16), torch.randn(1, 8, 1, 128, **bf16)
    cos, sin = rotary_cos_sin(torch.arange(7, 8, device="cuda"), 128, dtype=torch.bfloat16)
    weight = torch.randn(4096, 4096, **bf16) / 64
    qw, qw8 = rooftop.quantize_weight(weight, bits=4), rooftop.quantize_weight(weight, bits=8)
    return {
        "add_rms_norm 1x4096": (rooftop.rms_norm, (x, w, 1e-6, res)),
        "rms_norm 1x4096": (rooftop.rms_norm, (x, w)),
        "fused_add_rms_norm_ 1x4096": (rooftop.fused_add_rms_norm_, (x.clone(), res.clone(), w)),
        "layer_norm 1x4096": (rooftop.layer_norm, (x, w, w - 0.5)),
        "softmax 1x4096": (rooftop.softmax, (x,)),
        "softmax 8x8192": (rooftop.softmax, (wide,)),
        "swiglu 1x14336": (rooftop.swiglu, (gate, up)),
        "bias_gelu 1x4096": (rooftop.bias_gelu, (x, w)),
        "row_sum 8x8192": (rooftop.row_sum, (wide,)),
        "apply_rope 32+8 heads": (rooftop.apply_rope, (q, k, cos, sin)),
        "quant_matmul int4 1x4096x4096": (quant_matmul._quant_matmul, (x, *_weight_tensors(qw))),
        "quant_matmul int8 1x4096x4096": (quant_matmul._quant_matmul, (x, *_weight_tensors(qw8))),
    }


def main(out_dir: Path, decode: bool) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {"floors": floors(), "ops": [], "decode_us": []}
    for name, (op, args) in planned_calls().items():
        op(*args)
        op(*args)  # a first call that tuned is not recorded: the second is
        full = op.__wrapped__
        result["ops"].append({"call": name, "plans": len(op.plans),
                              "planned_python_us": python_launch_us(lambda: op(*args)),
                              "full_path_python_us": python_launch_us(lambda: full(*args)),
                              "graph_us": graph_replay_us([lambda: op(*args)])})
    for op in ("add_rms_norm", "softmax") if decode else ():
        result["decode_us"] += decode_latency(op, DECODE_SHAPES, torch.bfloat16)
    (out_dir / "host-path.json").write_text(json.dumps(result, indent=1))
    print("floors (us):", {k: round(v, 2) for k, v in result["floors"].items()})
    print(f"{'call':28s} {'planned':>8s} {'full':>8s} {'GPU':>6s}  (us a call from Python; GPU alone)")
    for r in result["ops"]:
        print(f"{r['call']:28s} {r['planned_python_us']:8.1f} {r['full_path_python_us']:8.1f} {r['graph_us']:6.2f}"
              + ("" if r["plans"] else "  (no plan)"))
    print(f"{'decode':22s} {'provider':>8s} {'python':>8s} {'graph':>6s}")
    for r in result["decode_us"]:
        print(f"{r['op'] + ' ' + 'x'.join(map(str, r['shape'])):22s} {r['provider']:>8s} {r['python_us']:8.1f} "
              f"{r['graph_us']:6.2f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--no-decode" not in sys.argv)
