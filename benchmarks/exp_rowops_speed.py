"""Experiment: bias_gelu, old against new, bf16, M * N = 2^27: GB/s and % of a measured copy of the
same bytes, on the GPU alone (CUDA-graph replay; every call reads 256 MB, several times L2, so each reads
HBM), results checked against the float64 reference once per shape.

"old" is the library's bias_gelu at commit 1e11c4f, its kernel and launch choice kept below (this file
only): erfc from Numerical Recipes' erfcc (a degree-9 polynomial), one row per program of 8192 elements,
16 a thread. New (activations.py): gelu(x) = relu(x) - v 2^(P(v) - x^2 log2(e) / 2), v = |x| / (1 +
0.27 |x|), P of degree 6 for 16-bit outputs, bf16 widened through its bits, two rows a thread sharing
their bias values, 32 elements a thread.

Measured on the H200, 2026-12-01 (benchmarks/results/logs/h200-2026-12-01-s9/exp-rowops-run1.log and
.json), % of copy, old -> new:
  bias_gelu "none": N=1024 92.0 -> 96.6, 8192 85.7 -> 95.7, 65536 82.6 -> 88.1, 262144 82.5 -> 93.0
  bias_gelu "tanh": N=1024 97.0 -> 96.1, 8192 97.6 -> 95.6, 65536 92.4 -> 87.6, 262144 91.7 -> 93.2
That run also compared the row reductions (row_sum / max / mean / norm) with a rewrite that split rows
past 8192 elements into one-tile chunks: the rewrite reached 94.4-97.3% of copy against the old kernels'
96.0-101.8% by GPU time (CUDA-graph replay), so it was not kept (reductions.py is the old code) and its
half of this script is gone. The old reduction kernels were never slow on the GPU: the 82-83% in the
results file at N >= 65536 is do_bench timing, which includes the host's launch time.

Usage (from the repo root):
  PYTHONPATH=src python benchmarks/exp_rowops_speed.py OUT_DIR     # GPU: OUT_DIR/exp-rowops-speed.json
  PYTHONPATH=src python benchmarks/exp_rowops_speed.py --sass      # no GPU: sm_90 SASS per element
  TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/exp_rowops_speed.py --cpu-check   # interpreter
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
import time

import torch
import triton
import triton.language as tl

from gluon_sm90 import read_cubin, results, sass_loops
from rooftop.ops import activations as act
from rooftop.ops._support import cdiv, launch

M_TIMES_N = 2**27
GELU_WIDTHS = (1024, 8192, 65536, 262144)
# cuobjdump -sass lines: (address, instruction)
SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+((?:@!?U?P\w+\s+)?[A-Z][^;]*);")

# ---------------------------------------------------------------------------------------------
# The old bias_gelu kernel (commit 1e11c4f), unchanged


@triton.jit
def _old_reciprocal(x, APPROX: tl.constexpr):
    if APPROX:
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        return 1.0 / x


@triton.jit
def _old_activate(x, ACT: tl.constexpr, APPROX: tl.constexpr):
    if ACT == "gelu_tanh":
        return x * _old_reciprocal(1.0 + tl.exp2(-x * (2.302208198144325 + 0.1029432395800235 * x * x)), APPROX)
    else:
        t = _old_reciprocal(1.0 + 0.3535533905932738 * tl.abs(x), APPROX)
        p = t * (0.40232158165 + t * (-1.63775315234 + t * (2.14747446393 + t * (-1.18611494508 + t * 0.24651729790))))
        p = -2.82574821841 + t * (1.44272920391 + t * (0.53970061553 + t * (0.13963005652 + t * (-0.26875686034 + p))))
        half_erfc = t * tl.exp2(p - 0.7213475204444817 * x * x)  # Phi(-|x|)
        return x * tl.where(x >= 0, 1.0 - half_erfc, half_erfc)


@triton.jit
def _old_bias_act_kernel(a_ptr, b_ptr, out_ptr, M, N, a_stride, out_stride, ACT: tl.constexpr, APPROX: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN: tl.constexpr):
    # the old _act_rows_kernel with BIAS=True
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = None if EVEN else (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    a = tl.load(a_ptr + rows[:, None] * a_stride + cols[None, :], mask=mask).to(tl.float32)
    bias = tl.load(b_ptr + cols, mask=None if EVEN else cols < N).to(tl.float32)
    y = _old_activate(a + bias[None, :], ACT, APPROX)
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def old_gelu_config(M: int, N: int) -> tuple[int, int, int]:
    block_n = min(triton.next_power_of_2(N), 8192)
    block_m = max(1, min(8192 // block_n, triton.next_power_of_2(M)))
    return block_m, block_n, max(1, min(16, block_m * block_n // (32 * 16)))


def old_bias_gelu(x: torch.Tensor, bias: torch.Tensor, approximate: str) -> torch.Tensor:
    out = torch.empty_like(x)
    M, N = x.shape
    block_m, block_n, warps = old_gelu_config(M, N)
    launch(_old_bias_act_kernel, (cdiv(M, block_m), cdiv(N, block_n)), x, bias, out, M, N, x.stride(0), out.stride(0),
           ACT="gelu" if approximate == "none" else "gelu_tanh", APPROX=x.is_cuda, BLOCK_M=block_m, BLOCK_N=block_n,
           EVEN=M % block_m == 0 and N % block_n == 0, num_warps=warps)
    return out


# ---------------------------------------------------------------------------------------------
# Offline sm_90 SASS: instructions a thread issues per element


def compile_sm90(fn, constexprs: dict, warps: int):
    """A Triton kernel compiled for sm_90 as a launch on 16-byte aligned tensors specialises it (pointers,
    N and the row strides multiples of 16). (gluon_sm90.compile_sm90 is the Gluon kernels' one.)"""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {a: "constexpr" if a in constexprs else "*bf16" if a.endswith("_ptr") else "i32" for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or a == "N" or a.endswith("stride")}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps))


def straight_path(sass: str) -> list[str]:
    """Instructions (NOPs left out) outside any loop, up to the first unpredicated EXIT: what a program
    runs."""
    in_loop = [(start, end) for start, end, _ in sass_loops(sass, lambda body: True)]
    path = []
    for addr, text in SASS_LINE.findall(sass):
        text = text.strip()
        if text.startswith("NOP") or any(start <= int(addr, 16) <= end for start, end in in_loop):
            continue
        path.append(text)
        if re.match(r"EXIT", text):
            break
    return path


def report(name: str, fn, constexprs: dict, warps: int, per_thread: float) -> None:
    cubin = read_cubin(compile_sm90(fn, constexprs, warps))
    regs = int(re.search(r"REG:(\d+)", cubin.resources).group(1))
    path = straight_path(cubin.sass)
    hist = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in path)
    print(f"{name:44s} REG {regs:3d}  straight path {len(path):4d} / {per_thread:g} = "
          f"{len(path) / per_thread:5.2f} an element")
    print("    " + " ".join(f"{k} {n}" for k, n in hist.most_common(14)))


def sass_mode() -> None:
    for approximate, activation in (("none", "gelu"), ("tanh", "gelu_tanh")):
        for N in (1024, 8192):  # every N >= 8192 launches the 8192 variant
            M = M_TIMES_N // N
            bm, bn, w = old_gelu_config(M, N)
            report(f"bias_gelu {approximate} N={N} old {bm}x{bn} w{w}", _old_bias_act_kernel,
                   dict(ACT=activation, APPROX=True, BLOCK_M=bm, BLOCK_N=bn, EVEN=True), w, bm * bn / (32 * w))
            bm, bn, w = act.rows_config(M, N, True)
            report(f"bias_gelu {approximate} N={N} new {bm}x{bn} w{w}", act._act_rows_kernel,
                   dict(ACT=activation, APPROX=True, BIAS=True, BLOCK_M=bm, BLOCK_N=bn, EVEN=True), w,
                   bm * bn / (32 * w))


# ---------------------------------------------------------------------------------------------
# GPU measurement


def gpu_us(fn) -> float:
    """Microseconds a call on the GPU alone: 10 calls in a CUDA graph, replayed (triton's do_bench,
    median); each call reads 256 MB, far past L2."""
    from rooftop.bench.timing import graph_replay_us

    return graph_replay_us([fn], repeat=10)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    if out.isnan().any():
        return float("nan")
    return ((out - ref).norm() / ref.norm()).item()


def measure_gelu(x: torch.Tensor, copy_gbps: float, timer, save) -> None:
    M, N = x.shape
    bias = torch.randn(N, device=x.device, dtype=x.dtype)
    for approximate in ("none", "tanh"):
        ref = act.bias_gelu_reference(x, bias, approximate)
        ref16 = ref.to(x.dtype)
        variants = {"old": lambda: old_bias_gelu(x, bias, approximate),
                    "new": lambda: act.bias_gelu(x, bias, approximate)}
        for variant, fn in variants.items():
            out = fn()
            err = rel_err(out, ref)
            # elements whose bf16 result differs from the correctly rounded one, and by how many ulps (+0 = -0)
            diff = (out.view(torch.int16).int() - ref16.view(torch.int16).int()).abs().masked_fill_(out == ref16, 0)
            us = timer(fn)
            gbps = 2 * x.numel() * x.element_size() / us / 1e3
            save({"op": "bias_gelu", "approximate": approximate, "variant": variant, "shape": [M, N], "us": us,
                  "GBps": gbps, "pct_of_copy": 100 * gbps / copy_gbps, "rel_err": err, "ok": err < 1.5e-2,
                  "misrounded_frac": (diff > 0).float().mean().item(), "max_ulps": diff.max().item()})


def measure(out_dir: str, device: str = "cuda", total: int = M_TIMES_N, timer=None) -> list[dict]:
    """Every case, old and new; the rows are written to OUT_DIR/exp-rowops-speed.json after each one
    (the first row says what ran, and how it was timed)."""
    timer = timer or gpu_us
    rows, write = results(out_dir, "exp-rowops-speed.json")

    def save(row: dict) -> None:
        rows.append(row)
        write()
        print(json.dumps(row), flush=True)

    save({"op": "run", "device": torch.cuda.get_device_name() if device == "cuda" else device,
          "torch": torch.__version__, "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"),
          "timing": "GPU alone: a CUDA graph of 10 calls, median replay"})
    torch.manual_seed(0)
    for N in GELU_WIDTHS:
        if N > total // 32:
            continue
        x = torch.randn(total // N, N, device=device, dtype=torch.bfloat16)
        dst = torch.empty_like(x)
        us = timer(lambda: dst.copy_(x))
        copy_gbps = 2 * x.numel() * x.element_size() / us / 1e3  # read + write
        save({"op": "copy", "shape": list(x.shape), "us": us, "GBps": copy_gbps})
        measure_gelu(x, copy_gbps, timer, save)
        if device == "cuda":
            torch.cuda.empty_cache()
    print("summary (% of copy, old -> new):")
    for r in rows:
        if r.get("variant") == "new":
            old = next(o for o in rows if o.get("variant") == "old" and o["op"] == r["op"]
                       and o["shape"] == r["shape"] and o.get("approximate") == r.get("approximate"))
            print(f"  {r['op']:10s} {r.get('approximate', ''):4s} N={r['shape'][1]:6d}: {old['pct_of_copy']:5.1f} -> "
                  f"{r['pct_of_copy']:5.1f}%  (results ok: old {old['ok']}, new {r['ok']})")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", help="output folder (GPU run)")
    parser.add_argument("--sass", action="store_true", help="offline: sm_90 SASS instructions per element")
    parser.add_argument("--cpu-check", action="store_true",
                        help="the GPU run's code on small tensors in the interpreter (TRITON_INTERPRET=1), untimed")
    args = parser.parse_args()
    if args.sass:
        sass_mode()
    elif args.cpu_check:
        rows = measure(args.out or tempfile.mkdtemp(), "cpu", 2**21, timer=lambda fn: 1.0)
        assert all(r.get("ok", True) for r in rows), "a result is off"
    elif args.out:
        measure(args.out)
    else:
        parser.error("give OUT_DIR (GPU) or --sass")


if __name__ == "__main__":
    sys.exit(main())
