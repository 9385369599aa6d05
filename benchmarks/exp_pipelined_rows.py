"""Experiment: the looped row kernels with Triton's software pipeliner (tl.range num_stages: tiles
copied asynchronously into shared memory, several in flight) instead of a register double buffer.

Prediction (JOURNAL.md, session 3): the register-held prefetch limits the looped softmax to 48% occupancy and
~66% of copy at N >= 65536; async copies into shared memory free registers and keep STAGES tiles in
flight, so the wide rows should approach the on-chip kernels' 90%+. Baseline: the current kernels,
same run. Usage: PYTHONPATH=src python benchmarks/exp_pipelined_rows.py OUT.json
"""
from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

import rooftop
from rooftop.bench.timing import bench_ms
from rooftop.ops._support import num_sms

M_TIMES_N = 2**27


@triton.jit
def softmax_pipelined_kernel(x_ptr, y_ptr, M, N, xs, ys, TILE: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, TILE)
    n_tiles = tl.cdiv(N, TILE)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * xs
        y_row = y_ptr + tl.cast(row, tl.int64) * ys
        m = tl.full([], -float("inf"), tl.float32)
        s = tl.zeros([TILE], tl.float32)
        for off in tl.range(0, N, TILE, num_stages=STAGES):
            x = tl.load(x_row + off + cols, mask=off + cols < N, other=-float("inf"),
                        eviction_policy="evict_last").to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            ref = tl.where(m_new == -float("inf"), 0.0, m_new)
            s = s * tl.exp(m - ref) + tl.exp(x - ref)
            m = m_new
        inv = 1.0 / tl.sum(s, axis=0)
        for t in tl.range(0, n_tiles, num_stages=STAGES):
            off = (n_tiles - 1 - t) * TILE
            x = tl.load(x_row + off + cols, mask=off + cols < N, other=0.0,
                        eviction_policy="evict_first").to(tl.float32)
            tl.store(y_row + off + cols, (tl.exp(x - m) * inv).to(y_row.dtype.element_ty), mask=off + cols < N)


@triton.jit
def rms_pipelined_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, M, N, eps, HAS_RESIDUAL: tl.constexpr,
                         TILE: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, TILE)
    n_tiles = tl.cdiv(N, TILE)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        base = tl.cast(row, tl.int64) * N
        src = (r_ptr if HAS_RESIDUAL else x_ptr) + base
        acc = tl.zeros([TILE], tl.float32)
        for off in tl.range(0, N, TILE, num_stages=STAGES):
            mask = off + cols < N
            r = tl.load(x_ptr + base + off + cols, mask=mask, other=0.0,
                        eviction_policy="evict_first" if HAS_RESIDUAL else "evict_last").to(tl.float32)
            if HAS_RESIDUAL:
                r = (r + tl.load(res_ptr + base + off + cols, mask=mask, other=0.0, eviction_policy="evict_first")
                     .to(tl.float32)).to(r_ptr.dtype.element_ty)
                tl.store(r_ptr + base + off + cols, r, mask=mask, eviction_policy="evict_last")
                r = r.to(tl.float32)
            acc += r * r
        rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
        for t in tl.range(0, n_tiles, num_stages=STAGES):
            off = (n_tiles - 1 - t) * TILE
            mask = off + cols < N
            r = tl.load(src + off + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + off + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            tl.store(y_ptr + base + off + cols, (r * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def configs():
    for tile in (2048, 4096, 8192):
        for ept in (8, 16):
            for stages in (2, 3, 4):
                for pps in (2, 4):
                    yield tile, tile // (32 * ept), stages, pps


def main(out_path: str) -> None:
    sms = num_sms(0)
    rows = []
    for N in (16384, 32768, 65536, 131072, 262144):
        M = M_TIMES_N // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        res = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        y = torch.empty_like(x)
        r = torch.empty_like(x)
        ref_sm = torch.softmax(x.float(), -1)
        cases = {"softmax": (2, lambda: rooftop.softmax(x)),
                 "rms_norm": (2, lambda: rooftop.rms_norm(x, w)),
                 "add_rms_norm": (4, lambda: rooftop.rms_norm(x, w, residual=res))}
        for op, (tensors, fn) in cases.items():
            ms = bench_ms(fn)
            rows.append({"op": op, "N": N, "variant": "current", "GBps": tensors * M * N * 2 / ms / 1e6})
        best = {}
        for tile, warps, stages, pps in configs():
            grid = (min(M, pps * sms),)
            variants = {
                "softmax": (2, lambda: softmax_pipelined_kernel[grid](x, y, M, N, N, N, TILE=tile, STAGES=stages,
                                                                     num_warps=warps)),
                "rms_norm": (2, lambda: rms_pipelined_kernel[grid](x, x, w, y, y, M, N, 1e-6, HAS_RESIDUAL=False,
                                                                   TILE=tile, STAGES=stages, num_warps=warps)),
                "add_rms_norm": (4, lambda: rms_pipelined_kernel[grid](x, res, w, y, r, M, N, 1e-6,
                                                                       HAS_RESIDUAL=True, TILE=tile, STAGES=stages,
                                                                       num_warps=warps))}
            for op, (tensors, fn) in variants.items():
                try:
                    fn()
                    if op == "softmax":
                        assert (y.float() - ref_sm).abs().max() < 1e-2, "wrong softmax"
                    ms = bench_ms(fn, warmup_ms=10, rep_ms=40)
                except Exception as e:
                    print("skip", op, N, tile, warps, stages, pps, type(e).__name__, str(e)[:80])
                    continue
                row = {"op": op, "N": N, "variant": "pipelined", "tile": tile, "warps": warps, "stages": stages,
                       "pps": pps, "GBps": tensors * M * N * 2 / ms / 1e6}
                rows.append(row)
                if row["GBps"] > best.get(op, {"GBps": 0})["GBps"]:
                    best[op] = row
        for op in cases:
            cur = next(r for r in rows if r["op"] == op and r["N"] == N and r["variant"] == "current")
            print(f"{op:13s} N={N:6d} current {cur['GBps']:6.0f} GB/s  best pipelined {best.get(op)}", flush=True)
        del x, res, y, r, ref_sm
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "exp_pipelined_rows.json")
