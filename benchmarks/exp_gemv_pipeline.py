r"""Experiment: how many bytes in flight does the int4 GEMV (quant_matmul's `_qgemv_kernel`, M = 1) need, and can
Triton's software pipeliner give them to it?

Seen before (exp_gemv_layout.py, H200, 2026-12-01, GPU time, graph replay, L2 flushed): a probe that only READS the
packed words with the GEMV's grid and program shape (1 warp, 128 columns, 4 word rows a step, 32 splits) runs
28672 x 8192's 117 MB at 3.0 TB/s (39 us) and 14336 x 4096's 29 MB at 2.0 TB/s (15 us); the GEMV itself 51 / 19 us.
So the GEMV's memory side, not its arithmetic, is short: each program waits for its 2 KB step before it issues the
next; 28 programs an SM keep ~56 KB in flight. The library's STAGES > 1 candidates pipeline only inside a group
(4 k-steps of 32: the pipeline restarts every group), so they never got the depth.

Here, with the grid and program shape as the library's:
  read   `_read_words_kernel`: the probe, its loop through tl.range(num_stages=STAGES) (cp.async into a ring of
         shared memory, STAGES - 1 steps ahead), and a flat streaming read of the same words (8192 a program, 4 warps)
         as the ceiling for that many bytes;
  gemv   `_qgemv_flat_kernel`: the library's GEMV with one flat loop over the split's k-steps (tl.range(num_stages=
         STAGES)), the group's scale and zero point applied where a group (or the split) ends (a run-time if), the
         scales and zeros loaded every step (L1 hits after a group's first step; the pipeliner prefetches them with
         the words);
at the library's split rule and at a half and a quarter of it (deeper pipelines need more steps a program).
Prediction: the probe reaches ~4 TB/s at 28672 x 8192 from STAGES ~4 (one wave, ~100 KB an SM in flight), and the
flat GEMV follows it to ~35 us (3x cuBLAS) if its arithmetic (3-4 instructions a code) fits under the stream.
Writes OUT/exp-gemv-pipeline.json, prints a table. Usage: PYTHONPATH=src python benchmarks/exp_gemv_pipeline.py OUT
[--check] (--check: the interpreter, small shapes, the flat GEMV against the library's; no GPU needed)"""
import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm
from rooftop.ops._support import arrival_counters, launch


@triton.jit
def _read_words_kernel(w_ptr, out_ptr, k_rows, N, SPLIT_K: tl.constexpr, BLOCK_N: tl.constexpr, WORDS: tl.constexpr,
                       STAGES: tl.constexpr):
    # Grid (N / BLOCK_N, SPLIT_K), as the GEMV's: WORDS word rows x BLOCK_N columns a step over the split's rows.
    # Reads every word once, writes one int32 a program.
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    per_split = tl.cdiv(k_rows // WORDS, SPLIT_K) * WORDS
    r0 = split * per_split
    r1 = tl.minimum(r0 + per_split, k_rows)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    acc = tl.zeros([WORDS, BLOCK_N], tl.int32)
    for r in tl.range(r0, r1, WORDS, num_stages=STAGES):
        acc ^= tl.load(w_ptr + (r + tl.arange(0, WORDS))[:, None].to(tl.int64) * N + cols)
    tl.store(out_ptr + pid_n * SPLIT_K + split, tl.xor_sum(tl.xor_sum(acc, axis=1), axis=0))


@triton.jit
def _stream_kernel(w_ptr, out_ptr, BLOCK: tl.constexpr):
    # Reads BLOCK contiguous words a program, writes one int32: the plain streaming read of the same bytes.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.xor_sum(tl.load(w_ptr + offs), axis=0))


@triton.jit
def _qgemv_flat_kernel(x_ptr, w_ptr, s_ptr, z_ptr, b_ptr, out_ptr, ws_ptr, cnt_ptr, M, N, K, x_stride, out_stride,
                       magic15, SPLIT_K: tl.constexpr, BITS: tl.constexpr, GROUP: tl.constexpr,
                       HAS_ZERO: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, STAGES: tl.constexpr, SUM_BATCH: tl.constexpr, XCONST: tl.constexpr):
    # As quant_matmul._qgemv_kernel (its maths, grid and traffic), with one flat loop over the split's k-steps.
    # XCONST (a diagnostic, wrong results): x taken as 1.0, not loaded nor broadcast (what x's path costs).
    PACK: tl.constexpr = 32 // BITS
    WORDS: tl.constexpr = BLOCK_K // PACK
    STEPS: tl.constexpr = GROUP // BLOCK_K
    XW: tl.constexpr = min(WORDS, max(1, 32 // (BLOCK_M * PACK)))
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = (cols < N)[None, :]
    rows = tl.arange(0, BLOCK_M)
    k_steps = K // BLOCK_K
    per_split = tl.cdiv(k_steps, SPLIT_K)
    t_start = split * per_split
    t_end = tl.minimum(t_start + per_split, k_steps)
    x_mask = rows[:, None] < M
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    dot = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    sum15 = tl.zeros([BLOCK_M, 1], tl.float32)
    sum19 = tl.zeros([BLOCK_M, 1], tl.float32)
    for t in tl.range(t_start, t_end, num_stages=STAGES):
        w_row = w_ptr + tl.cast(t * WORDS, tl.int64) * N + cols[None, :]
        x_ptrs = x_ptr + rows[:, None].to(tl.int64) * x_stride + t * BLOCK_K + tl.arange(0, XW * PACK)[None, :]
        s, z = qm._scale_and_zero(s_ptr, z_ptr, t // STEPS, cols[None, :], col_mask, N, HAS_ZERO, BITS)
        for j in tl.static_range(WORDS):
            if j % XW == 0:
                if XCONST:
                    x = tl.full([BLOCK_M, XW * PACK], 1.0, tl.float32)
                else:
                    x = tl.load(x_ptrs + j * PACK, mask=x_mask, other=0.0).to(tl.float32)
                    x = tl.sum(x[:, :, None], axis=2)
            words = tl.load(w_row + j * N, mask=col_mask)
            for i in tl.static_range(PACK):
                codes, _ = qm._unpack(words, i, magic15, BITS)
                xk = qm._take(x, (j % XW) * PACK + i)[:, None]
                if i % (8 // BITS) == 0:
                    sum15 += xk
                else:
                    sum19 += xk
                dot = tl.fma(xk, codes, dot)
        if (t % STEPS == STEPS - 1) | (t == t_end - 1):  # the group (or the split) ends here
            acc = tl.fma(s, dot - (sum15 * 256.0 + sum19 * 16.0 + z * (sum15 + sum19)), acc)
            dot = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            sum15 = tl.zeros([BLOCK_M, 1], tl.float32)
            sum19 = tl.zeros([BLOCK_M, 1], tl.float32)
    qm.store_split_output(acc, rows, cols, M, N, b_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr, pid_n, split, SPLIT_K,
                          HAS_BIAS, SUM_BATCH)


def flat_gemv(x, qw, N: int, K: int, block_n: int, word_rows: int, split: int, stages: int, maxnreg=None,
              xconst: bool = False):
    M, bits = x.shape[0], qw.bits
    block_k = word_rows * 32 // bits
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    ws = torch.empty((split, M, N), device=x.device, dtype=torch.float32)
    zeros = qw.packed if qw.zeros is None else qw.zeros
    tiles = triton.cdiv(N, block_n)
    launch(_qgemv_flat_kernel, (tiles, split), x, qw.packed, qw.scales, zeros, out, out, ws,
           arrival_counters(x.device, tiles), M, N, K, x.stride(0), out.stride(0), qm.MAGIC15, SPLIT_K=split, BITS=bits,
           GROUP=qw.group_size, HAS_ZERO=qw.zeros is not None, HAS_BIAS=False, BLOCK_M=triton.next_power_of_2(M),
           BLOCK_N=block_n, BLOCK_K=block_k, STAGES=stages, SUM_BATCH=max(1, 64 // max(1, block_n // 32)),
           XCONST=xconst, num_warps=1, **({"maxnreg": maxnreg} if maxnreg else {}))
    return out


def read_probe(packed, N: int, block_n: int, words: int, split: int, stages: int, warps: int):
    out = torch.empty(N // block_n * split, device=packed.device, dtype=torch.int32)
    launch(_read_words_kernel, (N // block_n, split), packed, out, packed.shape[0], N, SPLIT_K=split,
           BLOCK_N=block_n, WORDS=words, STAGES=stages, num_warps=warps)
    return out


def stream(packed):
    out = torch.empty(packed.numel() // 8192, device=packed.device, dtype=torch.int32)
    launch(_stream_kernel, (packed.numel() // 8192,), packed, out, BLOCK=8192, num_warps=4)
    return out


def check():
    torch.manual_seed(0)
    for bits in (4, 8):
        for M, N, K, split, stages in ((1, 256, 512, 2, 1), (1, 256, 512, 3, 2), (3, 128, 384, 2, 1)):
            x, qw, w = qm._make_inputs(bits)((M, N, K), torch.float16, "cpu")
            ref = qm._reference(x, qw, w).float()
            out = flat_gemv(x, qw, N, K, 128, 4, split, stages).float()
            err = float((out - ref).norm() / ref.norm())
            print(f"int{bits} {M}x{N}x{K} split {split}: rel err {err:.1e}")
            assert err < 2e-3, err


PROBES = ((128, 1, 4, 1), (128, 1, 4, 3), (128, 1, 4, 6), (128, 1, 8, 1), (128, 1, 8, 4), (128, 1, 16, 1),
          (256, 2, 8, 4), (512, 4, 8, 4), (512, 4, 4, 8))  # BLOCK_N, warps, word rows, STAGES
FLAT = ((128, 4, 1, 72), (128, 4, 2, 72), (128, 4, 3, None), (128, 4, 4, None), (128, 4, 6, None),
        (128, 8, 3, None))  # BLOCK_N, word rows, STAGES, maxnreg


# --graph: the results harness's timing (rooftop.bench.timing.graph_replay_us: calls back to back in one CUDA graph,
# over GRAPH_SETS copies of x and the weight, no flush, no launch gaps), the few variants that matter: GRAPH_FLAT's
# (BLOCK_N, word rows, STAGES, maxnreg, divisor of the library's split, XCONST)
GRAPH_SETS = 3
GRAPH_FLAT = ((128, 4, 1, 72, 1, False), (128, 4, 1, 72, 2, False), (128, 4, 1, 72, 1, True),
              (128, 4, 3, None, 2, False), (128, 8, 3, None, 2, False), (128, 8, 3, None, 4, False))


def graph_main(out: str):
    from rooftop.bench.timing import graph_replay_us
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for N, K in qm.BENCH_SHAPES[1:]:
        sets = [qm._make_inputs(4)((1, N, K), torch.bfloat16, "cuda") for _ in range(GRAPH_SETS)]

        def timed(make) -> float:
            return graph_replay_us([lambda s=s: make(*s) for s in sets], repeat=max(1, 64 // len(sets)))

        x, qw, w = sets[0]
        nbytes = qw.packed.numel() * 4
        weight_bytes = nbytes + qw.scales.numel() * 2 + qw.zeros.numel()
        library = qm._gemv(qm.GEMV_CONFIGS[0], 1, N, K, 4, 128, sms)
        split = library["SPLIT_K"]
        figures = dict(cublas=timed(lambda x, qw, w: F.linear(x, w)),
                       library=timed(lambda x, qw, w: qm._run_config(library, x, qw.packed, qw.scales, qw.zeros, None,
                                                                     N, 4, 128)[0]),
                       stream=timed(lambda x, qw, w: stream(qw.packed)),
                       read=timed(lambda x, qw, w: read_probe(qw.packed, N, 128, 4, split, 1, 1)))
        for block_n, words, stages, maxnreg, divisor, xconst in GRAPH_FLAT:
            name = f"flat_rows{words}_stages{stages}_split{split // divisor}" + ("_xconst" if xconst else "")
            figures[name] = timed(lambda x, qw, w: flat_gemv(x, qw, N, K, block_n, words, split // divisor, stages,
                                                             maxnreg, xconst))
        print(f"{N}x{K} (graph replay, {GRAPH_SETS} copies):", flush=True)
        for name, us in figures.items():
            moved = nbytes if name in ("stream", "read") else weight_bytes
            print(f"  {name:36s} {us:6.1f} us  x{figures['cublas'] / us:.2f} cuBLAS  {moved / us / 1e3:5.0f} GB/s "
                  f"({'words' if moved == nbytes else 'int4 weight'})", flush=True)
        rows.append(dict(N=N, K=K, timing="graph_replay_us", us=figures, library=library))
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, "exp-gemv-pipeline-graph.json").write_text(json.dumps(rows, indent=1))


def ncu_target():
    """One library GEMV launch at 1 x 28672 x 8192 after a warm-up, for Nsight Compute."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x, qw, w = qm._make_inputs(4)((1, 28672, 8192), torch.bfloat16, "cuda")
    library = qm._gemv(qm.GEMV_CONFIGS[0], 1, 28672, 8192, 4, 128, sms)
    for _ in range(3):
        qm._run_config(library, x, qw.packed, qw.scales, qw.zeros, None, 28672, 4, 128)
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--ncu-target", action="store_true")
    parser.add_argument("--budget", type=float, default=240.0)
    args = parser.parse_args()
    if args.check:
        return check()
    if args.graph:
        return graph_main(args.out)
    if args.ncu_target:
        return ncu_target()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, start = [], time.time()
    for N, K in qm.BENCH_SHAPES[1:]:
        x, qw, w = qm._make_inputs(4)((1, N, K), torch.bfloat16, "cuda")
        cublas_us = _autotune.time_ms(lambda: F.linear(x, w)) * 1e3
        nbytes = qw.packed.numel() * 4
        weight_bytes = nbytes + qw.scales.numel() * 2 + qw.zeros.numel()
        library = qm._gemv(qm.GEMV_CONFIGS[0], 1, N, K, 4, 128, sms)
        ref = qm._run_config(library, x, qw.packed, qw.scales, qw.zeros, None, N, 4, 128)[0].float()
        lib_us = _autotune.time_ms(lambda: qm._run_config(library, x, qw.packed, qw.scales, qw.zeros, None, N, 4,
                                                          128)[0]) * 1e3
        stream_us = _autotune.time_ms(lambda: stream(qw.packed)) * 1e3
        print(f"{N}x{K}: cuBLAS {cublas_us:.1f} us, library GEMV {lib_us:.1f} us (x{cublas_us / lib_us:.2f}, split "
              f"{library['SPLIT_K']}), stream read {stream_us:.1f} us ({nbytes / stream_us / 1e3:.0f} GB/s)",
              flush=True)
        rows.append(dict(kind="base", N=N, K=K, cublas_us=cublas_us, library_us=lib_us, stream_us=stream_us,
                         library=library))
        base_split = library["SPLIT_K"]
        for split in (base_split, base_split // 2, base_split // 4):
            for block_n, warps, words, stages in PROBES:
                if time.time() - start > args.budget:
                    break
                us = _autotune.time_ms(lambda: read_probe(qw.packed, N, block_n, words, split, stages, warps)) * 1e3
                rows.append(dict(kind="read", N=N, K=K, split=split, block_n=block_n, warps=warps, words=words,
                                 stages=stages, us=us, GBps=nbytes / us / 1e3))
                print(f"  read  split {split:3d} BN {block_n} w{warps} rows {words:2d} stages {stages}: {us:6.1f} us "
                      f"({nbytes / us / 1e3:.0f} GB/s)", flush=True)
            for block_n, words, stages, maxnreg in FLAT:
                if time.time() - start > args.budget:
                    break
                run = lambda: flat_gemv(x, qw, N, K, block_n, words, split, stages, maxnreg)  # noqa: E731
                try:
                    err = float((run().float() - ref).norm() / ref.norm())
                    us = _autotune.time_ms(run) * 1e3
                except Exception as e:  # noqa: BLE001  (a variant that does not compile is recorded)
                    rows.append(dict(kind="gemv", N=N, K=K, split=split, block_n=block_n, words=words, stages=stages,
                                     maxnreg=maxnreg, error=str(e)[:200]))
                    continue
                rows.append(dict(kind="gemv", N=N, K=K, split=split, block_n=block_n, words=words, stages=stages,
                                 maxnreg=maxnreg, us=us, rel_err=err, x_cublas=cublas_us / us,
                                 weight_GBps=weight_bytes / us / 1e3))
                print(f"  gemv  split {split:3d} BN {block_n} rows {words:2d} stages {stages} maxnreg {maxnreg}: "
                      f"{us:6.1f} us x{cublas_us / us:.2f} cuBLAS (err {err:.1e})", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-gemv-pipeline.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
