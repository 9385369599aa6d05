r"""Experiment: moe_experts reading each routed expert once a step, however many of the step's tokens share it.

moe_experts (ops/moe.py) runs a program per (token, expert) pair: pairs that share an expert each read it (from L2
when their programs run close). Session 61 (journal 424): 8 tokens of Mixtral-8x7B's experts (16 pairs on 8 experts)
reached 66% of the once-an-expert floor on the H200, 82% on the H100; with random routing 8 tokens of top-2-of-8
reach ~7.2 experts for 16 pairs, Qwen3-30B-A3B's 16 tokens ~81 of 128 experts for 128 pairs.

Here the pair that comes first among those routed to an expert (its "owner") does the expert's work for all of them,
the others' programs return at once (no host synchronisation: each program reads the step's k T indices, at most
PAIRS_MAX, and finds its group itself):
- gate / up, program (pair, BLOCK_N columns of I): the owner gathers its group's x rows (GROUP a pass, a tl.dot of
  [GROUP, BLOCK_K] x [BLOCK_K, BLOCK_N] a k-step) and reads its expert's 2 BLOCK_N H weights once;
- down, program (pair, BLOCK_N columns of H, a range of I): the owner reads the expert's BLOCK_N rows of its range
  once for the group and stores each member's w * (D h) partial (fp32) to a workspace [splits, k T, H]; each member's
  arrival is counted on its token's tile, and the last of the tile's k x splits arrivals sums them in (split, j) order
  (deterministic) and writes out[t, cols].
Predicted (H200): 8 tokens of Mixtral 66% -> 85-90% of the floor; 16 of Qwen3 with random routing ahead of moe_experts
by the share of repeated reads (~1.4x); 1 token within 5% of moe_experts (no sharing; tensor-core dots at M = GROUP
waste work, not bytes). Usage: python benchmarks/exp_moe_grouped.py OUT | --check (interpreter: against float64)
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

from rooftop.ops import moe
from rooftop.ops._support import arrival_counters, cdiv, launch, num_sms
from rooftop.ops.activations import _activate

PAIRS_MAX = 256  # k T a step at most (the index vector each program scans)
GROUP = 16  # pairs of one expert a pass (tl.dot's least M)
LAUNCH = dict(gate_up=(16, 128, 4), down=(16, 128, 4, 4))  # (BLOCK_N, BLOCK_K, warps[, programs an SM])
# timed on the GPU, each for both kernels (offline sm_90: 142-154 / 77-150 registers, no spills)
LAUNCHES = ((16, 128, 4), (16, 256, 4), (32, 128, 4), (16, 64, 2))


@triton.jit
def _group_of(idx_ptr, pair, P, E, PAIRS: tl.constexpr):
    """Pair `pair`'s group: the pairs routed to its expert (a pair with an index outside [0, E): itself alone).
    Returns (whether it is the group's first pair, live, expert, match [PAIRS], rank [PAIRS] within the group,
    the group's size)."""
    p = tl.arange(0, PAIRS)
    ids = tl.load(idx_ptr + p, mask=p < P, other=-1).to(tl.int64)
    expert = tl.load(idx_ptr + pair).to(tl.int64)
    live = (expert >= 0) & (expert < E)
    match = tl.where(live, (ids == expert) & (p < P), p == pair)
    first = tl.min(tl.where(match, p, P), axis=0)
    rank = tl.cumsum(match.to(tl.int32), axis=0) - 1
    return first == pair, live, tl.where(live, expert, 0), match, rank, tl.sum(match.to(tl.int32), axis=0)


@triton.jit
def _members(match, rank, base, count, PAIRS: tl.constexpr, GROUP: tl.constexpr):
    """The group's pairs base .. base + GROUP - 1 (by rank), and which of those slots exist."""
    p = tl.arange(0, PAIRS)
    r = base + tl.arange(0, GROUP)
    member = tl.sum(tl.where(match[None, :] & (rank[None, :] == r[:, None]), p[None, :], 0), axis=1)
    return member, r < count


@triton.jit
def _gate_up_grouped_kernel(x_ptr, idx_ptr, w_ptr, h_ptr, P, H, I, E, TOP_K, x_stride, we_stride, wn_stride,
                            ACT: tl.constexpr, APPROX: tl.constexpr, PRECISION: tl.constexpr, PAIRS: tl.constexpr,
                            GROUP: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Program (pair, column block); an owner reads 2 BLOCK_N H weights of its expert once and its group's x rows
    # (L2), and writes BLOCK_N elements of h per member.
    pair = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    owner, live, expert, match, rank, count = _group_of(idx_ptr, pair, P, E, PAIRS)
    if owner & live:
        gate_rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        up_rows = gate_rows + tl.cast(I, tl.int64) * wn_stride
        for base in range(0, count, GROUP):
            member, valid = _members(match, rank, base, count, PAIRS, GROUP)
            x_rows = x_ptr + (member // TOP_K).to(tl.int64)[:, None] * x_stride
            g = tl.zeros([GROUP, BLOCK_N], tl.float32)
            u = tl.zeros([GROUP, BLOCK_N], tl.float32)
            for k0 in range(0, H, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                xk = tl.load(x_rows + ks[None, :], mask=valid[:, None] & (ks[None, :] < H), other=0.0)
                w_mask = (cols[:, None] < I) & (ks[None, :] < H)
                wg = tl.load(gate_rows + ks[None, :], mask=w_mask, other=0.0, eviction_policy="evict_first")
                wu = tl.load(up_rows + ks[None, :], mask=w_mask, other=0.0, eviction_policy="evict_first")
                g = tl.dot(xk, tl.trans(wg), g, input_precision=PRECISION)
                u = tl.dot(xk, tl.trans(wu), u, input_precision=PRECISION)
            y = _activate(g, ACT, APPROX, False) * u
            tl.store(h_ptr + member.to(tl.int64)[:, None] * I + cols[None, :], y.to(h_ptr.dtype.element_ty),
                     mask=valid[:, None] & (cols[None, :] < I))


@triton.jit
def _down_grouped_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, out_ptr, ws_ptr, cnt_ptr, P, H, I, E, k_split, rw_stride,
                         we_stride, wn_stride, out_stride, TOP_K: tl.constexpr, SPLITS: tl.constexpr,
                         PRECISION: tl.constexpr, PAIRS: tl.constexpr, GROUP: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    # Program (pair, column block, range of I); an owner reads its expert's BLOCK_N rows over its range once and its
    # group's h ranges (L2), stores a [GROUP, BLOCK_N] fp32 partial; the last arrival of a token tile reads its
    # TOP_K x SPLITS partials (L2) and writes BLOCK_N elements of out.
    pair = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < H
    k_start = split * k_split
    k_end = tl.minimum(k_start + k_split, I)
    owner, live, expert, match, rank, count = _group_of(idx_ptr, pair, P, E, PAIRS)
    if owner:
        rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        for base in range(0, count, GROUP):
            member, valid = _members(match, rank, base, count, PAIRS, GROUP)
            member = member.to(tl.int64)
            token = member // TOP_K
            acc = tl.zeros([GROUP, BLOCK_N], tl.float32)
            if live:  # a dead pair's partial is zero (h unread: the gate / up kernel left it unwritten)
                for k0 in range(k_start, k_end, BLOCK_K):
                    ks = k0 + tl.arange(0, BLOCK_K)
                    hk = tl.load(h_ptr + member[:, None] * I + ks[None, :], mask=valid[:, None] & (ks[None, :] < k_end),
                                 other=0.0)
                    wd = tl.load(rows + ks[None, :], mask=col_ok[:, None] & (ks[None, :] < k_end), other=0.0,
                                 eviction_policy="evict_first")
                    acc = tl.dot(hk, tl.trans(wd), acc, input_precision=PRECISION)
            weight = tl.load(rw_ptr + token * rw_stride + member % TOP_K, mask=valid & live, other=0.0)
            acc = acc * weight.to(tl.float32)[:, None]
            part_mask = valid[:, None] & col_ok[None, :]
            tl.store(ws_ptr + (split * P + member)[:, None] * H + cols[None, :], acc, mask=part_mask)
            tl.debug_barrier()  # every thread's partials before the arrivals are published
            tile = token * tl.num_programs(1) + pid_n
            # a masked vector atomic's old values reach the threads that read them only since Triton 3.4 (issue
            # 7402, fixed by PR 7460); the pinned 3.6 has it
            arrived = tl.atomic_add(cnt_ptr + tile, 1, mask=valid, sem="acq_rel", scope="gpu")
            last = valid & (arrived == TOP_K * SPLITS - 1)
            tl.debug_barrier()  # the acquiring threads before the others read the partials
            total = tl.zeros([GROUP, BLOCK_N], tl.float32)
            for s in tl.static_range(SPLITS):  # in (split, j) order: the sum does not depend on arrival order
                for j in tl.static_range(TOP_K):
                    total += tl.load(ws_ptr + (s * P + token * TOP_K + j)[:, None] * H + cols[None, :],
                                     mask=last[:, None] & col_ok[None, :], other=0.0, cache_modifier=".cg")
            tl.store(out_ptr + token[:, None] * out_stride + cols[None, :], total.to(out_ptr.dtype.element_ty),
                     mask=last[:, None] & col_ok[None, :])
            tl.store(cnt_ptr + tile, 0, mask=last)


def moe_experts_grouped(x, index, weights, gate_up, down, activation="silu", launches=None):
    """moe_experts with each routed expert read once (x, index, weights contiguous; k T <= PAIRS_MAX)."""
    launches = launches or LAUNCH
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, index.shape[1]
    P = T * top_k
    assert P <= PAIRS_MAX and x.is_contiguous() and index.is_contiguous() and weights.is_contiguous()
    pairs_pow2 = max(16, triton.next_power_of_2(P))
    precision = "ieee" if x.dtype == torch.float32 else "tf32"
    h = torch.empty((P, I), device=x.device, dtype=x.dtype)
    block_n, block_k, warps = launches["gate_up"]
    launch(_gate_up_grouped_kernel, (P, cdiv(I, block_n)), x, index, gate_up, h, P, H, I, E, top_k, x.stride(0),
           gate_up.stride(0), gate_up.stride(1), ACT=activation, APPROX=x.is_cuda, PRECISION=precision,
           PAIRS=pairs_pow2, GROUP=GROUP, BLOCK_N=block_n, BLOCK_K=min(block_k, max(16, triton.next_power_of_2(H))),
           num_warps=warps)
    block_n, block_k, warps, per_sm = launches["down"]
    block_k = min(block_k, max(16, triton.next_power_of_2(I)))
    tiles, steps = P * cdiv(H, block_n), cdiv(I, block_k)
    splits = max(1, min(cdiv(per_sm * num_sms(x.device.index if x.is_cuda else -1), tiles), steps, 8))
    k_split = cdiv(steps, splits) * block_k
    splits = cdiv(I, k_split)
    out = torch.empty_like(x)
    partials = torch.empty((splits, P, H), device=x.device, dtype=torch.float32)
    launch(_down_grouped_kernel, (P, cdiv(H, block_n), splits), h, index, weights, down, out, partials,
           arrival_counters(x.device, T * cdiv(H, block_n)), P, H, I, E, k_split, weights.stride(0), down.stride(0),
           down.stride(1), out.stride(0), TOP_K=top_k, SPLITS=splits, PRECISION=precision, PAIRS=pairs_pow2,
           GROUP=GROUP, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps)
    return out


def random_routing(T, E, k, device, generator=None):
    """Each token's k distinct experts drawn at random (as a router's top-k are), softmax weights."""
    index = torch.rand(T, E, device=device, generator=generator).argsort(-1)[:, :k].contiguous()
    return index, torch.softmax(torch.randn(T, k, device=device, generator=generator), -1)


def check() -> None:
    """Against float64 in the interpreter: shared experts, duplicates within a token, sentinels, more than GROUP
    pairs on one expert, fp32 and bf16, k-ranges split."""
    from conftest import rel_err  # the interpreter's test patches (bf16 dots), as the suite runs them
    g = torch.Generator().manual_seed(0)
    cases = [(4, 4, 2, 64, 48, torch.float32), (8, 4, 2, 64, 40, torch.bfloat16), (40, 2, 1, 32, 24, torch.float32),
             (3, 8, 3, 48, 80, torch.float32)]
    for T, E, k, H, I, dtype in cases:
        x = torch.randn(T, H, generator=g).to(dtype)
        index, weights = random_routing(T, E, k, "cpu", g)
        if T == 3:
            index[0, 1], index[1, 0], index[2, 2] = index[0, 0], E, -1  # a duplicate, the sentinel, a negative
        gate_up = (torch.randn(E, 2 * I, H, generator=g) * H ** -0.5).to(dtype)
        down = (torch.randn(E, H, I, generator=g) * I ** -0.5).to(dtype)
        got = moe_experts_grouped(x, index, weights, gate_up, down,
                                  launches=dict(gate_up=(16, 32, 4), down=(16, 16, 4, 64)))
        err = rel_err(got, moe.moe_experts_reference(x, index, weights, gate_up, down))
        print(f"T {T} E {E} k {k} H {H} I {I} {str(dtype)[6:]}: rel err {err:.2e}")
        assert err < (1e-5 if dtype == torch.float32 else 1.5e-2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
        return check()
    from rooftop.bench.timing import graph_replay_us
    from rooftop.hardware import measure_ceilings
    from rooftop.ops._support import clear_plans
    copy_gbps = measure_ceilings().copy_GBps
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    grouped_mm = moe._grouped_mm_peer()
    rows = []
    for E, k, H, I in ((8, 2, 4096, 14336), (128, 8, 2048, 768)):
        for T in (1, 2, 4, 8, 16):
            for routing in ("round-robin", "random"):
                g = torch.Generator("cuda").manual_seed(T)
                gate_up = torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16) * H ** -0.5
                down = torch.randn(E, H, I, device="cuda", dtype=torch.bfloat16) * I ** -0.5
                experts_bytes = 3 * H * I * 2
                x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
                if routing == "random":
                    index, weights = random_routing(T, E, k, "cuda", g)
                else:
                    index = (torch.arange(T * k, device="cuda") % E).reshape(T, k)
                    weights = torch.softmax(torch.randn(T, k, device="cuda"), -1)
                distinct = int(index.unique().numel())
                floor_bytes = distinct * experts_bytes
                copies = max(1, -(-2 * l2 // floor_bytes))
                sets = [(x, index, weights, gate_up.clone(), down.clone()) for _ in range(copies)]
                ref = moe.moe_experts_reference(*sets[0]).float()
                providers = [("moe_experts", moe.moe_experts), ("grouped_mm", grouped_mm)] + [
                    ("grouped n{}k{}w{}".format(*gu), lambda *a, gu=gu: moe_experts_grouped(
                        *a, launches=dict(gate_up=gu, down=(*gu, 4)))) for gu in LAUNCHES]
                for name, fn in (p for p in providers if p[1] is not None):
                    clear_plans()
                    out = fn(*sets[0])
                    err = float((out.float() - ref).norm() / ref.norm())
                    us = graph_replay_us([lambda s=s: fn(*s) for s in sets], repeat=20)
                    again = fn(*sets[0])  # after replays: the arrival counters left as they must be
                    err = max(err, float((again.float() - ref).norm() / ref.norm()))
                    pct = floor_bytes / us / 1e3 / copy_gbps * 100
                    rows.append(dict(E=E, k=k, H=H, I=I, T=T, routing=routing, distinct=distinct, provider=name,
                                     us=us, pct_of_floor=pct, rel_err=err))
                    print(f"E {E:3d} k {k} T {T:2d} {routing:11s} ({distinct:3d} experts) {name:18s} {us:8.1f} us "
                          f"{pct:5.1f}% of floor  err {err:.1e}", flush=True)
                Path(args.out).mkdir(parents=True, exist_ok=True)
                Path(args.out, "exp-moe-grouped.json").write_text(json.dumps(rows, indent=1))
                del sets


if __name__ == "__main__":
    main()
