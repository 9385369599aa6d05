r"""Experiment: rooftop.moe_experts' launch shapes at decode sizes, beside transformers' experts loops.

moe_experts (ops/moe.py, session 60, not yet timed on a GPU) runs two CUDA-core GEMV kernels: gate / up with the
activation (a program a pair and BLOCK_N columns of I) and down with the router's weighted sum (a program a token and
BLOCK_N columns of H, I split over programs to fill the GPU). Offline sm_90 at (BLOCK_N, BLOCK_K, warps) = (16, 256,
4): 126 / 94 registers, no spills, 16-byte loads. Each (BLOCK_N, BLOCK_K, warps) below is set for both kernels
(GATE_UP_LAUNCH, DOWN_LAUNCH with 1 or 4 programs an SM) and timed by graph replay over input copies larger than
L2 at Mixtral-8x7B's (E 8, k 2, H 4096, I 14336) and Qwen3-30B-A3B's (E 128, k 8, H 2048, I 768) experts, 1 and 4
tokens; beside them transformers' grouped_mm experts (graph replay) and its eager loop (do_bench: it synchronises
the host). Prediction: 80-90% of the copy rate at Mixtral's shape, 60-75% at Qwen3's (768-wide rows: short k
loops); the split down kernel (4 an SM) ahead of 1 at one token; several x the loops. Also NOTES' lead: the down
kernel with the token's pairs inside the k loop ("pairs inside"), predicted ahead at Qwen3's shape (k = 8).
--quant fp8|int8 (session 61): launches for the quantized experts (k-tiles of 256-1024 one-byte codes a row; session
62 on an H100: the bf16 experts' launch within 4% of the best, so one launch serves both) beside the eager loop (each
expert hit dequantized), no other peer.
Writes OUT/exp-moe-launch[-QUANT].json. Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_moe_launch.py OUT
[--quick] [--quant fp8|int8]
"""
import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.bench.timing import bench_ms, graph_replay_us
from rooftop.hardware import measure_ceilings
from rooftop.ops import moe
from rooftop.ops._support import clear_plans

LAUNCHES = ((16, 256, 4), (32, 128, 4), (8, 512, 2), (16, 512, 4), (32, 256, 8), (8, 256, 2), (16, 128, 2))
QUANT_LAUNCHES = ((8, 512, 4), (8, 512, 2), (16, 512, 4), (8, 256, 2), (8, 1024, 4), (16, 256, 4))
PER_SM = (1, 4)  # the down kernel's programs an SM: I split to make them (1: few splits, or none)
CASES = ((1, 8, 2, 4096, 14336), (4, 8, 2, 4096, 14336), (1, 128, 8, 2048, 768), (4, 128, 8, 2048, 768))


@triton.jit
def _down_pairs_inside_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, out_ptr, H, I, E, rw_stride, we_stride, wn_stride,
                              out_stride, TOP_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # NOTES' lead for the down kernel: the token's pairs inside the k loop (TOP_K unrolled, their loads issued
    # together, the router weight folded into h's tile), I not split: for k = 8 pairs of short rows (Qwen3's 768).
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    for k0 in range(0, I, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        for j in tl.static_range(TOP_K):
            pair = token * TOP_K + j
            expert = tl.load(idx_ptr + pair).to(tl.int64)
            live = (expert >= 0) & (expert < E)
            weight = tl.where(live, tl.load(rw_ptr + token.to(tl.int64) * rw_stride + j).to(tl.float32), 0.0)
            expert = tl.where(live, expert, 0)
            hk = tl.load(h_ptr + pair.to(tl.int64) * I + ks, mask=ks < I, other=0.0).to(tl.float32) * weight
            rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride + ks[None, :]
            acc += tl.load(rows, mask=((cols < H) & live)[:, None] & (ks[None, :] < I), other=0.0,
                           eviction_policy="evict_first").to(tl.float32) * hk[None, :]
    tl.store(out_ptr + token.to(tl.int64) * out_stride + cols, tl.sum(acc, axis=1).to(out_ptr.dtype.element_ty),
             mask=cols < H)


def pairs_inside(x, index, weights, gate_up, down, block_n=16, block_k=128, warps=4):
    """moe_experts with the shipped gate / up kernel and _down_pairs_inside_kernel (x, index, weights contiguous)."""
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, index.shape[1]
    h = torch.empty((T * top_k, I), device=x.device, dtype=x.dtype)
    n, k, w = SHIPPED_GATE_UP
    moe.launch(moe._moe_gate_up_kernel, (T * top_k, -(-I // n)), x, index, gate_up, moe.float32_placeholder(x.device),
               h, H, I, E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1), ACT="silu", APPROX=x.is_cuda,
               SCALED=False, BLOCK_N=n, BLOCK_K=k, num_warps=w)
    out = torch.empty_like(x)
    moe.launch(_down_pairs_inside_kernel, (T, -(-H // block_n)), h, index, weights, down, out, H, I, E,
               weights.stride(0), down.stride(0), down.stride(1), out.stride(0), TOP_K=top_k, BLOCK_N=block_n,
               BLOCK_K=block_k, num_warps=warps)
    return out


SHIPPED_GATE_UP = moe.GATE_UP_LAUNCH


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true", help="the shipped launch, one token of each model")
    parser.add_argument("--quant", choices=list(moe.EXPERT_QUANTS), help="the quantized experts' launches")
    args = parser.parse_args()
    shipped = (moe.GATE_UP_LAUNCH, moe.DOWN_LAUNCH)
    launches, per_sms, cases = ((shipped[:1], (shipped[1][3],), CASES[::2]) if args.quick
                                else (QUANT_LAUNCHES if args.quant else LAUNCHES, PER_SM, CASES))
    spec = registry.get(f"moe_experts_{args.quant}" if args.quant else "moe_experts")
    copy_gbps = measure_ceilings().copy_GBps
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    grouped = spec.peers.get("grouped_mm", lambda: None)()  # the quantized experts have none
    rows = []
    for shape in cases:
        cost = spec.cost(shape, torch.bfloat16)
        copies = max(1, -(-2 * l2 // cost.bytes))
        sets = [spec.make_inputs(shape, torch.bfloat16, "cuda") for _ in range(copies)]
        ref = spec.reference(*sets[0])

        def record(provider, us, out):
            err = float((out.double() - ref).norm() / ref.norm())
            pct = cost.bytes / us / 1e3 / copy_gbps * 100
            rows.append(dict(shape=shape, provider=provider, us=us, pct_of_copy=pct, rel_err=err))
            print(f"{'x'.join(map(str, shape)):22s} {provider:22s} {us:8.1f} us {pct:5.1f}% of copy  err {err:.1e}",
                  flush=True)

        for launch in launches:
            for per_sm in per_sms:
                moe.GATE_UP_LAUNCH, moe.DOWN_LAUNCH = launch, (*launch, per_sm)
                clear_plans()
                out = spec.run(*sets[0])
                record("rooftop n{}k{}w{}p{}".format(*launch, per_sm),
                       graph_replay_us([lambda s=s: spec.run(*s) for s in sets], repeat=20), out)
        if args.quant:
            record("eager loop", bench_ms(lambda: spec.eager(*sets[0])) * 1e3, spec.eager(*sets[0]))
            Path(args.out).mkdir(parents=True, exist_ok=True)
            Path(args.out, f"exp-moe-launch-{args.quant}.json").write_text(json.dumps(rows, indent=1))
            continue
        for block_k in (128, 256):
            out = pairs_inside(*sets[0], block_k=block_k)
            record(f"pairs inside k{block_k}", graph_replay_us([lambda s=s: pairs_inside(*s, block_k=block_k)
                                                                for s in sets], repeat=20), out)
        if grouped is not None:
            record("grouped_mm", graph_replay_us([lambda s=s: grouped(*s) for s in sets], repeat=20), grouped(*sets[0]))
        record("eager loop", bench_ms(lambda: spec.eager(*sets[0])) * 1e3, spec.eager(*sets[0]))
        Path(args.out).mkdir(parents=True, exist_ok=True)  # after each case: a timeout keeps what ran
        Path(args.out, "exp-moe-launch.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
