"""Experiment: FlashAttention forward in Gluon with FA3's overlaps: inside a warp group, and ping-pong (Hopper).

Why: Triton 3.6 waits for each score MMA right after issuing it (journal item 41), so a program's softmax
never overlaps its own tensor-core work, and rooftop's Triton kernel stays at 0.77-0.86x cuDNN at
D = 128. Gluon (triton.experimental.gluon) exposes the asynchronous wgmma and its wait: here tile j's
scores S_j = Q K_j^T are issued, then O += P_{j-1} V_{j-1}, and the program waits only for S_j
(`warpgroup_mma_wait(1)`), so the softmax of S_j runs while the P V MMA does. ptxas (12.8) hoists the
following full wait above the softmax, and a bare barrier with it (offline SASS: every MUFU.EX2 after
`WARPGROUP.DEPBAR.LE gsb0, 0x0`); a shared-memory store of the softmax's row sums before a barrier pins
both, so the SASS keeps the exponentials between the two waits. (Issuing S_{j+1} before the softmax of
S_j, with a group in flight across the loop's back edge, makes ptxas serialise every wgmma: C7514.)

The kernel (dense, non-causal, S a multiple of both tiles, one [B * H * S, D] view per tensor, k/v heads
= q heads): one program per (query tile, batch * head), query tiles of a head adjacent; q by TMA once;
k and v tiles by TMA through a STAGES-deep ring (mbarrier per stage), a stage refilled once the P V
MMA that read it has completed and every warp has passed a barrier; the output staged through q's
shared memory and stored by TMA. Traffic: q and out once, each k/v tile once per program (from L2
mostly: the programs of a head run side by side).

Ping-pong (`_attention_fwd_pingpong`, now in rooftop.ops.attention_sm90; FA3's other half): item 47 found
the two warp groups above doing their softmax at the same time (the CTA barrier each step keeps them in
step), so the tensor cores idle through it. Here gl.warp_specialize splits a program into a 1-warp TMA
loader (24 registers) and two consumer warp groups (240 registers each, setmaxnreg), each with its own 64
query rows (a program covers 2 x 64 rows), sharing the k/v ring. No CTA-wide barrier after the fork: each
ring stage has "ready" mbarriers (TMA bytes) and "empty" ones counted by both consumers (one elected
arrive each once the MMA that read the stage completed; the loader's first pass waits for parity 1, which
a fresh mbarrier reports done). A pair of "turn" mbarriers orders the MMA issues (Gluon 3.6 has no named
barrier): a consumer waits for its turn, issues S_j and P_{j-1} V_{j-1}, passes the turn and runs its
softmax while the other's MMAs queue behind its own. The intra-warp-group overlap stays (same wait(1) /
pinned wait(0)); a `gl.thread_barrier` in a partition is a bar.sync of that warp group alone. Prediction:
a consumer's softmax (64 x BLOCK_N exponentials) takes about as long as the other's MMAs (2 x 64 x
BLOCK_N x 128), so the tensor cores stay busy: near cuDNN (600-640 TFLOP/s) if the alternation sets in,
still ~480 if the warp groups keep issuing in step or the single loader warp falls behind.

H200, bf16, D = 128, H = 16, B * S = 16384, dense (2026-12-01, benchmarks/results/logs/h200-2026-12-01-s8/),
TFLOP/s at S = 2048 / 4096 / 16384: ping-pong 128 x 2 stages 636 / 604 / 614, 128 x 3 stages 583 / 615 /
629, unpinned (no pin of the full wait) 591 / 612 / 636; cuDNN 583 / 564 / 615. So the ping-pong kernel
became a path of rooftop.attention (extended there with causal, GQA, lse, D = 64, fp16; the pin kept);
this script times its configurations through rooftop (prepared_attention), beside the kernel above.
Later (2026-12-01) the ping-pong kernel took any TMA-addressable layout (4-D descriptors with the tensors'
strides), any lengths (Sq != Sk too) and D = 256 (64-key tiles, 2 stages); --head-dim and --layout bshd
(Hugging Face's transposed views) time those.
Usage:
  .venv/bin/python benchmarks/exp_gluon_attention.py --compile-only   # no GPU: sm_90 registers / spills, SASS
  # H200: check against SDPA (cuDNN), time; the ping-pong configs run first, each first launch under a
  # 10 s watchdog (exit 124 on a deadlock, what was measured is saved); --variants pingpong: it and cuDNN only
  PYTHONPATH=src timeout 150 python benchmarks/exp_gluon_attention.py OUT_DIR [--variants pingpong] [--causal] \
      [--head-dim 64|128|256] [--layout bhsd|bshd]
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import re
import sys
from pathlib import Path

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_sm90 import compile_sm90, issues_wgmma, read_cubin, sass_loops, wait_or_exit
from rooftop.ops import attention_sm90
from rooftop.ops.attention import PINGPONG_CONFIGS

LOG2E = 1.4426950408889634
CONFIGS = ((128, 128, 2), (128, 128, 3), (128, 64, 3), (128, 64, 4))  # (BLOCK_M, BLOCK_N, STAGES), 8 warps


@gluon.jit
def _issue_kv(k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, row, stage):
    mbarrier.expect(k_bars.index(stage), k_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(k_desc, [row, 0], k_bars.index(stage), k_smem.index(stage))
    mbarrier.expect(v_bars.index(stage), v_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(v_desc, [row, 0], v_bars.index(stage), v_smem.index(stage))


@gluon.jit
def _attention_fwd_gluon(q_desc, k_desc, v_desc, o_desc, seqlen, tiles_m, qk_scale,
                         BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, D: gl.constexpr, STAGES: gl.constexpr,
                         PIN_WAIT: gl.constexpr, num_warps: gl.constexpr):
    pid = gl.program_id(0)
    bh = pid // tiles_m
    m0 = (pid % tiles_m) * BLOCK_M
    row0 = bh * seqlen  # the head's first row in the [B * H * S, D] views
    dtype: gl.constexpr = q_desc.dtype

    # wgmma accumulators: rows over the warps (two warp groups of 64 rows at 8 warps)
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)

    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, D], v_desc.layout)
    l_pin = gl.allocate_shared_memory(gl.float32, [BLOCK_M], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_bars.index(i), count=1)
        mbarrier.init(v_bars.index(i), count=1)
    fence_async_shared()

    n_tiles = seqlen // BLOCK_N
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [row0 + m0, 0], q_bar, q_smem)
    for i in gl.static_range(STAGES):  # n_tiles >= STAGES (checked on the host)
        _issue_kv(k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, row0 + i * BLOCK_N, i)
    mbarrier.wait(q_bar, 0)

    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    acc = gl.zeros([BLOCK_M, D], gl.float32, o_layout)

    # tile 0: scores and their softmax (nothing to overlap with yet)
    mbarrier.wait(k_bars.index(0), 0)
    s = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=(s, ))
    m_i = gl.max(s, axis=1) * qk_scale
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_i, 1))
    l_i = gl.sum(p, axis=1)
    p_op = gl.convert_layout(p.to(dtype), p_layout)

    for j in range(1, n_tiles):
        stage = j % STAGES
        prev = (j - 1) % STAGES
        mbarrier.wait(k_bars.index(stage), (j // STAGES) & 1)
        s = warpgroup_mma(q_smem, k_smem.index(stage).permute((1, 0)), zero_s, use_acc=False, is_async=True)
        mbarrier.wait(v_bars.index(prev), ((j - 1) // STAGES) & 1)
        acc = warpgroup_mma(p_op, v_smem.index(prev), acc, is_async=True)
        # S_j is the older group: wait for it alone, P_{j-1} V_{j-1} keeps the tensor cores busy
        s = warpgroup_mma_wait(1, deps=(s, ))
        m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
        p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
        alpha = gl.exp2(m_i - m_new)
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        if PIN_WAIT:  # a store of the softmax's result, then a barrier: ptxas cannot hoist the barrier
            l_pin.store(l_i)  # above the store, nor the wait below above the barrier
            gl.thread_barrier()
        acc, p_op = warpgroup_mma_wait(0, deps=(acc, p_op))
        # stage `prev` is read by no MMA of any warp once all have passed here: refill it
        gl.thread_barrier()
        if j - 1 + STAGES < n_tiles:
            _issue_kv(k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, row0 + (j - 1 + STAGES) * BLOCK_N, prev)
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
        p_op = gl.convert_layout(p.to(dtype), p_layout)

    last = (n_tiles - 1) % STAGES
    mbarrier.wait(v_bars.index(last), ((n_tiles - 1) // STAGES) & 1)
    acc = warpgroup_mma(p_op, v_smem.index(last), acc, is_async=True)
    acc = warpgroup_mma_wait(0, deps=(acc, ))

    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_bars.index(i))
        mbarrier.invalidate(v_bars.index(i))
    out = acc / gl.expand_dims(gl.convert_layout(l_i, o_rows), 1)
    q_smem.store(out.to(dtype))  # every MMA that read q is done
    fence_async_shared()
    gl.thread_barrier()
    tma.async_copy_shared_to_global(o_desc, [row0 + m0, 0], q_smem)
    tma.store_wait(0)


def attention_gluon(q, k, v, block_m=128, block_n=128, stages=3, scale=None, pin_wait=True):
    """Dense non-causal attention of contiguous [B, H, S, D] q, k, v (same heads), S a multiple of the tiles."""
    B, H, S, D = q.shape
    assert k.shape == v.shape == q.shape and S % block_m == 0 and S % block_n == 0 and S // block_n >= stages
    out = torch.empty_like(q)
    dt = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    descs = []
    for t, rows in ((q, block_m), (k, block_n), (v, block_n), (out, block_m)):
        flat = t.view(B * H * S, D)
        descs.append(TensorDescriptor(flat, list(flat.shape), list(flat.stride()), [rows, D],
                                      gl.NVMMASharedLayout.get_default_for([rows, D], dt)))
    tiles_m = S // block_m
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    _attention_fwd_gluon[(tiles_m * B * H,)](*descs, S, tiles_m, scale * LOG2E, BLOCK_M=block_m, BLOCK_N=block_n,
                                             D=D, STAGES=stages, PIN_WAIT=pin_wait, num_warps=8)
    return out


def _sass_loops(sass: str) -> list[str]:
    """One line per loop that issues wgmma: exponentials between the wait for S (gsb0 <= 1) and the full
    wait (gsb0 <= 0), mbarrier ops, barriers (id, threads)."""
    reports = []
    for start, end, body in sass_loops(sass, issues_wgmma):
        waits = [i for i, t in enumerate(body) if t.startswith("WARPGROUP.DEPBAR.LE")]
        between = body[waits[0]:waits[-1]] if len(waits) > 1 else []
        bars = sorted({re.sub(r"BAR.SYNC.DEFER_BLOCKING ", "", t) for t in body if "BAR.SYNC" in t})
        reports.append(f"loop {start:#x}-{end:#x}: HGMMA {sum(t.startswith('HGMMA') for t in body)}, "
                       f"MUFU.EX2 {sum('MUFU.EX2' in t for t in between)}/{sum('MUFU.EX2' in t for t in body)} "
                       f"between the waits, SYNCS {sum('SYNCS' in t for t in body)}, BAR.SYNC {bars}")
    return reports


def compile_only() -> None:
    """sm_90 compile of each config, no GPU: registers, spills, shared memory; for ping-pong, the
    setmaxnreg values and the shape of each wgmma loop in the SASS."""
    def desc(block):
        return f"tensordesc<bf16{list(block)},{gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)!r}>"

    D = 128
    for block_m, block_n, stages in CONFIGS:
        sig = {"q_desc": desc([block_m, D]), "k_desc": desc([block_n, D]), "v_desc": desc([block_n, D]),
               "o_desc": desc([block_m, D]),
               "seqlen": "i32", "tiles_m": "i32", "qk_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
               "D": "constexpr", "STAGES": "constexpr", "PIN_WAIT": "constexpr", "num_warps": "constexpr"}
        consts = dict(BLOCK_M=block_m, BLOCK_N=block_n, D=D, STAGES=stages, PIN_WAIT=True, num_warps=8)
        compiled = compile_sm90(_attention_fwd_gluon, sig, consts, 8)
        print(block_m, block_n, stages, read_cubin(compiled).resources, "smem", compiled.metadata.shared)
    rows = attention_sm90.CONSUMER_ROWS
    for D in attention_sm90.HEAD_DIMS:  # each ping-pong config of rooftop, the heaviest variant (causal, lse)
        for config in PINGPONG_CONFIGS[D]:
            sig = {"q_desc": desc([1, 1, rows, D]), "k_desc": desc([1, 1, config.block_n, D]),
                   "v_desc": desc([1, 1, config.block_n, D]), "o_desc": desc([1, 1, rows, D]), "lse_ptr": "*fp32",
                   "sinks_ptr": "*bf16",
                   "seqlen_q": "i32", "seqlen_k": "i32", "tiles_m": "i32", "n_heads": "i32", "kv_group": "i32",
                   "qk_scale": "fp32", "BLOCK_N": "constexpr", "STAGES": "constexpr", "CAUSAL": "constexpr",
                   "WRITE_LSE": "constexpr", "SINKS": "constexpr", "CONSUMER_REGS": "constexpr",
                   "LOADER_REGS": "constexpr"}
            for causal, sinks in ((False, False), (True, False), (True, True)):  # sinks: gpt-oss's full layers
                consts = dict(BLOCK_N=config.block_n, STAGES=config.num_stages, CAUSAL=causal, WRITE_LSE=True,
                              SINKS=sinks, CONSUMER_REGS=attention_sm90.CONSUMER_REGS,
                              LOADER_REGS=attention_sm90.LOADER_REGS)
                compiled = compile_sm90(attention_sm90._attention_fwd_pingpong, sig, consts)
                cubin = read_cubin(compiled)
                print(f"pingpong D={D} 2x{rows}x{config.block_n} {config.num_stages} stages"
                      + (" causal" if causal else "") + (" sinks" if sinks else ""), cubin.resources, "smem",
                      compiled.metadata.shared,
                      "setmaxnreg", cubin.maxnreg, "local memory ops", cubin.local_memory_ops)
                for line in _sass_loops(cubin.sass):
                    print("   ", line)


def measure(out_dir: str, variants: str, causal: bool, D: int, layout: str) -> None:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import rooftop
    import rooftop.ops.attention as attention_mod
    from rooftop.bench.timing import bench_ms
    torch.manual_seed(0)
    rows, H = [], 16 * 128 // D  # the registry's heads per head dim (D = 256: 8)
    Path(out_dir).mkdir(parents=True, exist_ok=True)

    def save():
        Path(out_dir, f"exp-gluon-attention-d{D}-{layout}{'-causal' if causal else ''}.json").write_text(
            json.dumps(rows, indent=1))

    for S in (2048, 4096, 16384):
        B = 16384 // S
        if layout == "bshd":  # Hugging Face's q.view(B, S, H, D).transpose(1, 2): no copy on either side
            q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
        else:
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * B * H * D * attention_mod.visible_pairs(S, S, -1, 0 if causal else -1)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        row = dict(S=S, B=B, H=H, D=D, layout=layout, causal=causal)
        rows.append(row)

        def record(name, make_run, watchdog_s=None):
            try:
                run = make_run()
                o = run()  # compiles (host side), then launches
                if watchdog_s:
                    wait_or_exit(watchdog_s, f"{name} at S = {S}", save)
                torch.cuda.synchronize()
                err = float((o.float() - ref.float()).norm() / ref.float().norm())
                row[name] = dict(tflops=flops / bench_ms(run) / 1e9, rel_err=err)
            except Exception as e:  # a config that fails is recorded, not fatal
                row[name] = dict(error=f"{type(e).__name__}: {str(e)[:300]}")

        # the new kernel first, each config's first launch under the watchdog
        for config in PINGPONG_CONFIGS[D]:  # rooftop's plan of that config: its first launch under prepared_attention
            record(f"pingpong_2x{attention_sm90.CONSUMER_ROWS}x{config.block_n}x{config.num_stages}",
                   functools.partial(attention_mod.prepared_attention, q, k, v, causal, config), 10.0)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            row["cudnn_tflops"] = flops / bench_ms(lambda: F.scaled_dot_product_attention(q, k, v,
                                                                                         is_causal=causal)) / 1e9
        if variants == "all":
            rooftop.attention(q, k, v, causal)  # tunes: Gluon and Triton candidates
            row["rooftop_tflops"] = flops / bench_ms(lambda: rooftop.attention(q, k, v, causal)) / 1e9
            attention_mod.GLUON_ENABLED = False  # the Triton kernel's best (tunes its own bucket)
            rooftop.attention(q, k, v, causal)
            row["rooftop_triton_tflops"] = flops / bench_ms(lambda: rooftop.attention(q, k, v, causal)) / 1e9
            attention_mod.GLUON_ENABLED = True
            if not causal and D == 128 and layout == "bhsd":  # the one-warp-group kernel above: contiguous, dense
                for (block_m, block_n, stages), pin in [(c, True) for c in CONFIGS] + [(CONFIGS[1], False)]:
                    name = f"gluon_{block_m}x{block_n}x{stages}" + ("" if pin else "_unpinned")
                    record(name, lambda: functools.partial(attention_gluon, q, k, v, block_m, block_n, stages,
                                                           pin_wait=pin))
        print(json.dumps(row), flush=True)
        save()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="gluon-attention")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--variants", choices=("all", "pingpong"), default="all",
                        help="pingpong: only the ping-pong kernel and cuDNN")
    parser.add_argument("--causal", action="store_true", help="causal attention (the ping-pong kernel, rooftop)")
    parser.add_argument("--head-dim", type=int, choices=attention_sm90.HEAD_DIMS, default=128)
    parser.add_argument("--layout", choices=("bhsd", "bshd"), default="bhsd",
                        help="bshd: [B, H, S, D] views of [B, S, H, D] memory (Hugging Face)")
    args = parser.parse_args()
    if args.compile_only:
        compile_only()
    else:
        sys.exit(measure(args.out, args.variants, args.causal, args.head_dim, args.layout))
