r"""Experiment: does the int4 / int8 GEMV (quant_matmul's `_qgemv_kernel`, M = 1) lose bandwidth to its access
pattern? Today a program (BLOCK_N columns, a split of K) reads word rows of the K-major packed tensor [K / P, N]:
pieces of BLOCK_N x 4 bytes (512 B at 128 columns), each N x 4 bytes from the next (114 KB at N = 28672), while a
copy streams contiguous memory. The same words laid out tile-major, [N / BLOCK_N, K / P, BLOCK_N] (a column tile's
words contiguous, a program's split one contiguous slab), give the same kernel a copy's pattern: `_qgemv_kernel`
takes the two strides (w_tile_stride, w_row_stride) = (BLOCK_N, N) for the library's layout, (K / P x BLOCK_N,
BLOCK_N) for the tiled one.

Two measurements per shape (M = 1, bf16 x, group 128, asymmetric; GPU time, graph replay, L2 flushed:
rooftop.ops._autotune.time_ms), beside cuBLAS F.linear on the bf16 weight:
  gemv      the library's first GEMV candidates on both layouts (its SPLIT_K rule), output checked against the
            library's (rel err) ;
  read      a probe that only reads the words with the GEMV's grid and program shape (XOR into a register, one
            int stored a program): the memory system's figure for each pattern, with no arithmetic.
Prediction: if DRAM page locality decides, the tiled reads run near a copy (~4.2 TB/s) and the library's pattern
below, and the GEMV gains as much as its read probe. Writes OUT/exp-gemv-layout.json, prints a table.
Seen (logs/h200-2026-12-01-s14/exp-gemv-layout.log): no difference, the GEMV and the read probe alike (e.g. 28672 x
8192: 51.1 / 51.0 us, reads 39.0 / 39.1 us), so the strides were taken out of the library's kernel again: this script
runs against commit e99e4f8, where `_qgemv_kernel` still took them.
Usage: PYTHONPATH=src python benchmarks/exp_gemv_layout.py OUT [--bits 4,8] [--configs 3]"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm
from rooftop.ops._support import arrival_counters, launch


@triton.jit
def _read_words_kernel(w_ptr, out_ptr, k_rows, w_tile_stride, w_row_stride, SPLIT_K: tl.constexpr,
                       BLOCK_N: tl.constexpr, WORDS: tl.constexpr):
    # Grid (N / BLOCK_N, SPLIT_K): as the GEMV, a program reads WORDS word rows x BLOCK_N columns a step over its
    # split's rows; reads every word once, writes one int32 a program.
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    per_split = tl.cdiv(k_rows // WORDS, SPLIT_K) * WORDS
    r0 = split * per_split
    r1 = tl.minimum(r0 + per_split, k_rows)
    ptrs = (w_ptr + tl.cast(pid_n, tl.int64) * w_tile_stride + tl.cast(r0, tl.int64) * w_row_stride
            + tl.arange(0, WORDS)[:, None] * w_row_stride + tl.arange(0, BLOCK_N)[None, :])
    acc = tl.zeros([WORDS, BLOCK_N], tl.int32)
    for _ in range(r0, r1, WORDS):
        acc ^= tl.load(ptrs)
        ptrs += WORDS * w_row_stride
    tl.store(out_ptr + pid_n * SPLIT_K + split, tl.xor_sum(tl.xor_sum(acc, axis=1), axis=0))


def tiled(packed: torch.Tensor, block_n: int) -> torch.Tensor:
    """[K / P, N] -> [N / block_n, K / P, block_n], contiguous."""
    rows, n = packed.shape
    return packed.view(rows, n // block_n, block_n).permute(1, 0, 2).contiguous()


def gemv(config: dict, x, packed, qw, N: int, K: int, bits: int, tile_major: bool):
    params = dict(config)
    params.pop("path")
    split = params.pop("SPLIT_K")
    block_n = params["BLOCK_N"]
    M = x.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    ws = torch.empty((split, M, N), device=x.device, dtype=torch.float32)
    strides = ((K * bits // 32) * block_n, block_n) if tile_major else (block_n, N)
    zeros = packed if qw.zeros is None else qw.zeros
    per_thread = max(1, params["BLOCK_M"] * block_n // (32 * params["num_warps"]))
    consts = dict(BITS=bits, GROUP=128, HAS_ZERO=qw.zeros is not None, HAS_BIAS=False, SPLIT_K=split,
                  SUM_BATCH=max(1, qm.SUM_REGS["gemv"] // per_thread))
    launch(qm._qgemv_kernel, (N // block_n, split), x, packed, qw.scales, zeros, out, out, ws,
           arrival_counters(x.device, N // block_n), M, N, K, x.stride(0), out.stride(0), qm.MAGIC15, *strides,
           **consts, **params)
    return out


def read_probe(packed, N: int, k_rows: int, block_n: int, words: int, split: int, tile_major: bool):
    out = torch.empty(N // block_n * split, device=packed.device, dtype=torch.int32)
    strides = (k_rows * block_n, block_n) if tile_major else (block_n, N)
    launch(_read_words_kernel, (N // block_n, split), packed, out, k_rows, *strides, SPLIT_K=split, BLOCK_N=block_n,
           WORDS=words, num_warps=1)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bits", default="4,8")
    parser.add_argument("--configs", type=int, default=3)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for bits in map(int, args.bits.split(",")):
        for N, K in qm.BENCH_SHAPES:
            x, qw, w = qm._make_inputs(bits)((1, N, K), torch.bfloat16, "cuda")
            cublas_us = _autotune.time_ms(lambda: F.linear(x, w)) * 1e3
            weight_bytes = qw.packed.numel() * 4 + qw.scales.numel() * 2 + (0 if qw.zeros is None else qw.zeros.numel())
            configs = [qm._gemv(c, 1, N, K, bits, 128, sms) for c in qm.GEMV_CONFIGS[:args.configs]]
            for config in configs:
                block_n = config["BLOCK_N"]
                if N % block_n:
                    continue
                packed_t = tiled(qw.packed, block_n)
                ref = gemv(config, x, qw.packed, qw, N, K, bits, False)
                words = config["BLOCK_K"] * bits // 32
                for tile_major, packed in ((False, qw.packed), (True, packed_t)):
                    run = lambda: gemv(config, x, packed, qw, N, K, bits, tile_major)  # noqa: E731
                    err = float((run().float() - ref.float()).norm() / ref.float().norm())
                    us = _autotune.time_ms(run) * 1e3
                    probe_us = _autotune.time_ms(lambda: read_probe(packed, N, qw.packed.shape[0], block_n, words,
                                                                   config["SPLIT_K"], tile_major)) * 1e3
                    row = dict(bits=bits, N=N, K=K, config=config, tile_major=tile_major, us=us, rel_err=err,
                               cublas_us=cublas_us, read_us=probe_us, weight_GBps=weight_bytes / us / 1e3,
                               read_GBps=qw.packed.numel() * 4 / probe_us / 1e3)
                    rows.append(row)
                    layout = "tiled" if tile_major else "rows "
                    print(f"int{bits} {N}x{K} BN{block_n} split {config['SPLIT_K']:3d} {layout} gemv {us:6.1f} us "
                          f"x{cublas_us / us:.2f} cuBLAS ({row['weight_GBps']:.0f} GB/s, err {err:.1e})  "
                          f"read {probe_us:6.1f} us ({row['read_GBps']:.0f} GB/s)", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-gemv-layout.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
