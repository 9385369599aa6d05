"""Diagnostic (H200): where a Gluon kernel spends its time, by Nsight Compute's PC sampling per SASS instruction
(the samples of each instruction's warp stalls).

Targets (TARGETS, by name):
- issue 6, the W4A16 Gluon kernels (ops/quant_matmul_sm90.py) at 28672 x 8192 (bf16, int4 group 128, zero points):
  "rs_m64n256" and "rs_m64n128" at M = 64, "ws_m256n128" at M = 256. Why (session 18): at M = 64 a k-step ran
  ~1460 cycles where each of its limits alone is about half that; the samples of the consumers' waits against the
  dequantizers' and their fences and barriers say which partition waits on which.
  "rs_m64n128_k256" and "rs_m64n128_dp_k256": that variant stream-K and data-parallel at 64 x 14336 x 256, where
  stream-K costs ~10 us more a call (session 19): which instructions hold that time.
- issue 6 at batch 1 / 16, quant_matmul's Triton GEMVs at 28672 x 8192: "gemv_m1" (the CUDA-core GEMV's first
  candidate), "mma_m1", "mma_m16" (the mma.sync GEMV's): both GEMVs run ~40 us at M = 1 where a read of the words runs
  28 (session 21). "gemv_m1_mid": the kept M = 1 candidate at 14336 x 4096 (session 24).
- issues 2 and 3, the wide-row ring kernels (ops/softmax_sm90.py, ops/norm_sm90.py) at M x N = 2^27 bf16:
  "softmax_32768", "softmax_65536", "layer_norm_65536" (86-88 % and 83-85 % of the copy where 90 % is wanted; the
  last round of rows is not it, journal item 129), "softmax_131072" (rows in parts): which wait (the ring's fill, the
  row statistics' exchange, the stores) holds the consumers.
- the per-pair MoE kernels (ops/moe.py) with int4 experts at one token of Mixtral-8x7B's (registry case
  1 x 8 x 2 x 4096 x 14336): "moe_int4_gate_up", "moe_int4_down" (session 68: 63% / 46.5% of DRAM where the dense
  int4 GEMV reads as many bytes at 79%; neither a second load in flight nor cp.async stages helped): which stall.
- gpt-oss's sliding-window attention at 16384 tokens, "attention_window128": ~7 us a program's life for 3-6 key
  tiles (16384 programs, ~4 resident an SM): which wait holds it.
Each target's call runs twice (compile, then the one ncu reads). Written per target t: OUT/t.ncu-rep, OUT/details-t.txt
(sections), OUT/source-t.csv (per SASS instruction); printed: the instructions holding most stall samples.
Usage (H200): PYTHONPATH=src:benchmarks python benchmarks/ncu_pc_sampling.py OUT_DIR [name,name]   (runs itself under
ncu; the second argument: which TARGETS, all by default)
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import torch

N, K = 28672, 8192
ROWS_ELEMENTS = 1 << 27
MIXTRAL_ONE_TOKEN = (1, 8, 2, 4096, 14336)  # moe_experts' (T, E, k, H, I)


def _quant(M: int, variant, N: int = N, K: int = K):
    """quant_matmul_sm90's `variant` (a library variant's name, or a variant) at M x N x K: its plan's call."""
    from rooftop.ops import quant_matmul_sm90 as qsm90
    from rooftop.ops.quant_matmul import quantize_weight
    variant = getattr(qsm90, variant) if isinstance(variant, str) else variant
    qw = quantize_weight(torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5, 4, 128)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    plan = qsm90.plan(variant.config(), x, qw.packed, qw.scales, qw.zeros, None, sms)
    return lambda: plan(x, qw.packed, qw.scales, qw.zeros, None, out)


def _gemv(M: int, config: dict, N: int = N, K: int = K):
    """quant_matmul's Triton GEMV candidate `config` (quant_matmul._gemv / _mma dicts) at M x N x K."""
    from rooftop.ops import quant_matmul as qm
    qw = qm.quantize_weight(torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5, 4, 128)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    return lambda: qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, 4, 128)


def _mma_config(M: int) -> dict:
    from rooftop.ops import quant_matmul as qm
    return qm._mma(qm.MMA_CONFIGS[8 if M <= 8 else 16][0], M)


def _gemv_config(M: int, config: tuple = None, N: int = N, K: int = K) -> dict:
    """The GEMV dict of `config` (a GEMV_CONFIGS tuple; its first by default) at M x N x K."""
    from rooftop.ops import quant_matmul as qm
    return qm._gemv(config or qm.GEMV_CONFIGS[0], M, N, K, 4, 128,
                    torch.cuda.get_device_properties(0).multi_processor_count)


def _rows(op: str, width: int):
    """rooftop's `op` on [2^27 / width, width] bf16 rows (the Gluon ring kernels take these widths)."""
    import rooftop
    x = torch.randn(ROWS_ELEMENTS // width, width, device="cuda", dtype=torch.bfloat16)
    w, b = torch.rand(width, device="cuda", dtype=torch.bfloat16) + 0.5, torch.randn_like(x[0])
    return {"softmax": lambda: rooftop.softmax(x), "layer_norm": lambda: rooftop.layer_norm(x, w, b)}[op]


def _registry_call(op: str, shape: tuple):
    """The registry op `op` by rooftop at `shape` (its bench inputs)."""
    from rooftop import registry
    spec = registry.get(op)
    inputs = spec.make_inputs(shape, torch.bfloat16, "cuda")
    return lambda: spec.run(*inputs)


def _data_parallel(variant: str):
    from dataclasses import replace

    from rooftop.ops import quant_matmul_sm90 as qsm90
    return replace(getattr(qsm90, variant), stream_k=False)


# name: (ncu's kernel filter, the call's maker)
TARGETS = {
    "rs_m64n256": ("regex:w4a16", lambda: _quant(64, "RS_M64_N256")),
    "ws_m256n128": ("regex:w4a16", lambda: _quant(256, "M256_N128")),
    "rs_m64n128": ("regex:w4a16", lambda: _quant(64, "RS_M64_N128")),
    # 64 x 14336 x 256: 4 k-steps a tile, where stream-K ran 19.2 us and the data-parallel form 9.9 (session 19)
    "rs_m64n128_k256": ("regex:w4a16", lambda: _quant(64, "RS_M64_N128", 14336, 256)),
    "rs_m64n128_dp_k256": ("regex:w4a16", lambda: _quant(64, _data_parallel("RS_M64_N128"), 14336, 256)),
    # issue 6 at batch 1: the CUDA-core GEMV and the mma.sync GEMV both run ~40 us where a read of the words runs 28
    # (session 21: the mma GEMV's instructions cut by a quarter changed nothing)
    "gemv_m1": ("regex:_qgemv_kernel", lambda: _gemv(1, _gemv_config(1))),
    # session 24: the kept M = 1 candidate (X_ASM, unrolled groups, 4 slices) at 14336 x 4096, 12.1 us where a read
    # of the words runs ~8.5, and neither fewer instructions (item 159) nor all loads issued early (item 163) helped
    "gemv_m1_mid": ("regex:_qgemv_kernel", lambda: _gemv(1, _gemv_config(1, (128, 4, 4, 7, 1, 72, 4, True, True),
                                                                       14336, 4096), 14336, 4096)),
    "mma_m1": ("regex:_qgemv_mma_kernel", lambda: _gemv(1, _mma_config(1))),
    "mma_m16": ("regex:_qgemv_mma_kernel", lambda: _gemv(16, _mma_config(16))),
    "softmax_32768": ("regex:_softmax_kernel", lambda: _rows("softmax", 32768)),
    "softmax_65536": ("regex:_softmax_kernel", lambda: _rows("softmax", 65536)),
    # rows in parts of 32768 on 8-warp consumers (79 % of the copy, 89 % would be 2x torch.compile; session 45)
    "softmax_131072": ("regex:_softmax_kernel", lambda: _rows("softmax", 131072)),
    "layer_norm_65536": ("regex:_norm_kernel", lambda: _rows("layer_norm", 65536)),
    "moe_int4_gate_up": ("regex:_moe_gate_up_kernel", lambda: _registry_call("moe_experts_int4", MIXTRAL_ONE_TOKEN)),
    "moe_int4_down": ("regex:_moe_down_kernel", lambda: _registry_call("moe_experts_int4", MIXTRAL_ONE_TOKEN)),
    # gpt-oss's sliding-window layers (128 keys; 41-45% of the copy floor on an H100, session 77): tune the registry
    # call first outside ncu with the same ROOFTOP_CACHE_DIR, so that ncu reads the tuned kernel, not a candidate
    "attention_window128": ("regex:_attention_fwd_kernel",
                            lambda: _registry_call("attention_sinks_window128", (1, 64, 16384, 64))),
}


def kernels(name: str) -> None:
    """TARGETS[name]'s call made twice (ncu reads the second)."""
    torch.manual_seed(0)
    call = TARGETS[name][1]()
    call()
    call()
    torch.cuda.synchronize()


def top_instructions(table: str, count: int = 25) -> list[str]:
    """The `count` SASS lines of a source page (CSV) with the most warp-stall samples, with their share."""
    lines = table.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"Address"')), len(lines))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))  # after the "Kernel Name" line
    if not rows:
        return ["(no rows)"]
    key = next((k for k in rows[0] if "Warp Stall Sampling (All" in k), None)
    if key is None:
        return [f"(columns: {list(rows[0])[:12]})"]
    value = lambda r: float((r.get(key) or "0").replace(",", "") or 0)  # noqa: E731
    total = sum(value(r) for r in rows) or 1.0
    best = sorted(rows, key=value, reverse=True)[:count]
    return [f"{100 * value(r) / total:5.1f}%  {r.get('Address', '?'):>8}  {r.get('Source', '')[:90]}" for r in best]


def main(out_dir: str, names: list[str]) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        rep = f"{out_dir}/{name}"
        run = subprocess.run(["ncu", "--set", "full", "--import-source", "no", "-k", TARGETS[name][0],
                              "--launch-skip", "1", "--launch-count", "1", "-f", "-o", rep, sys.executable, __file__,
                              "kernels", name],
                             capture_output=True, text=True)
        print(run.stdout[-1500:], run.stderr[-1500:])
        pages = {}
        for page, extra in (("details", []), ("source", ["--csv", "--print-source", "sass"])):
            done = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", page, *extra], capture_output=True,
                                  text=True)
            pages[page] = done.stdout
            with open(f"{out_dir}/{page}-{name}.{'csv' if extra else 'txt'}", "w") as f:
                f.write(done.stdout + done.stderr)
        print(f"== {name}: the instructions holding the most stall samples")
        print("\n".join(top_instructions(pages["source"])))


if __name__ == "__main__":
    if sys.argv[1] == "kernels":
        kernels(sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else list(TARGETS))
