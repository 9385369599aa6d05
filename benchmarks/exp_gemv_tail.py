r"""Experiment: what the batch-1 GEMV's split-K costs beside its reads (issue 6: 3x cuBLAS wants ~10 us at 14336 x 4096
and 4096 x 14336, where the CUDA-core GEMV runs 13.6 / 15.6 and a read of the 30.8 MB ~8.5).

quant_matmul's CUDA-core GEMV (`_qgemv_kernel`, M = 1, --config: by default the first candidate, 128 columns and 1 warp
a program, 4 word rows a k-step) at its split of K and at half and twice that, int4 and int8, the benchmark shapes,
each timed by graph replay over input copies (as the results harness), against:
  read      exp_gemv_pipeline.read_probe: the same grid and program shape (a slice a program), only reading the words;
  no_fixup  (--probe, a process of its own: Triton keeps a kernel's first compile) `store_split_output` swapped for a
            plain store of each program's partial into the output: no partials, no arrival counter, no sums (wrong
            results; the store races), so the time of the arithmetic and reads alone.
Prediction (journal item 153): the fix-up (partials stored, an acq_rel atomic, the last program's 32-64 partial loads in
rounds of SUM_BATCH) costs ~2 us a call at the mid shapes, more with more splits; if so, splitting K among a program's
warps (shared-memory sums) instead of programs is the cure.
Writes OUT/exp-gemv-tail-MODE.json. Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemv_tail.py OUT
       [--probe] [--config '(128, 4, 4, 7, 1, 72, 4, True, True)']
"""
import argparse
import ast
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from exp_gemv_pipeline import read_probe
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import quant_matmul as qm


@triton.jit
def _store_only(acc, rows, cols, M, N, b_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr, tile, piece, pieces,
                HAS_BIAS: tl.constexpr, SUM_BATCH: tl.constexpr):
    # the probe's stand-in for quant_matmul's store_split_output: every piece stores its partial as the tile's output
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None].to(tl.int64) * out_stride + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=mask)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--probe", action="store_true", help="time the GEMV without its fix-up (wrong results)")
    parser.add_argument("--config", default="(128, 1, 4, 32, 1, 72)",
                        help="the GEMV_CONFIGS tuple to time (session 24's kept M = 1 one: '(128, 4, 4, 7, 1, 72, 4, "
                             "True, True)')")
    args = parser.parse_args()
    if args.probe:
        qm.store_split_output = _store_only  # before anything compiles (the GEMVs resolve the name in qm)
    mode = "no_fixup" if args.probe else "library "
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for bits in (4, 8):
        for N, K in qm.BENCH_SHAPES:
            copies = max(1, -(-2 * l2 // (N * K * bits // 8)))
            sets = [qm._make_inputs(bits)((1, N, K), torch.bfloat16, "cuda") for _ in range(copies)]
            x, qw, w = sets[0]
            ref = qm._reference(x, qw, w)
            config = qm._gemv(ast.literal_eval(args.config), 1, N, K, bits, 128, sms)
            for split in sorted({max(1, config["SPLIT_K"] // 2), config["SPLIT_K"], config["SPLIT_K"] * 2}):
                run = {**config, "SPLIT_K": split}
                fn = lambda x, qw, w, run=run: qm._run_config(run, x, qw.packed, qw.scales, qw.zeros, None, N, bits,
                                                              128)[0]
                err = (fn(x, qw, w).float() - ref.float()).norm().item() / ref.float().norm().item()
                us = graph_replay_us([lambda s=s: fn(*s) for s in sets], repeat=max(1, 48 // len(sets)))
                words = run["BLOCK_K"] * bits // 32
                parts = split * run["SLICES"]
                read = graph_replay_us([lambda s=s: read_probe(s[1].packed, N, run["BLOCK_N"], words, parts, 1, 1)
                                        for s in sets], repeat=max(1, 48 // len(sets)))
                row = dict(bits=bits, N=N, K=K, split=split, mode=mode.strip(), us=us, read_us=read, rel_err=err)
                rows.append(row)
                print(f"int{bits} {N:5d}x{K:<5d} split {split:3d}  {mode} "
                      f"{us:6.1f} us  read {read:6.1f} us  err {err:.1e}", flush=True)
            torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"exp-gemv-tail-{mode.strip()}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
