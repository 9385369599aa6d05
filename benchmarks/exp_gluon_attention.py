"""Experiment: FlashAttention forward in Gluon with FA3's overlap inside a warp group (Hopper).

Why: Triton 3.6 waits for each score MMA right after issuing it (NOTES item 41), so a program's softmax
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

Not wired into rooftop: an experiment to see whether the overlap pays on the H200.
Usage:
  .venv/bin/python benchmarks/exp_gluon_attention.py --compile-only   # no GPU: sm_90 registers / spills
  PYTHONPATH=src python benchmarks/exp_gluon_attention.py OUT_DIR      # H200: check against SDPA, time
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

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


def compile_only() -> None:
    """sm_90 compile of each config, no GPU: registers, spills, shared memory."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    binaries = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"
    D = 128
    for block_m, block_n, stages in CONFIGS:
        def desc(rows):
            return f"tensordesc<bf16[{rows}, {D}],{gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16)!r}>"
        sig = {"q_desc": desc(block_m), "k_desc": desc(block_n), "v_desc": desc(block_n), "o_desc": desc(block_m),
               "seqlen": "i32", "tiles_m": "i32", "qk_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
               "D": "constexpr", "STAGES": "constexpr", "PIN_WAIT": "constexpr", "num_warps": "constexpr"}
        consts = dict(BLOCK_M=block_m, BLOCK_N=block_n, D=D, STAGES=stages, PIN_WAIT=True, num_warps=8)
        src = GluonASTSource(_attention_fwd_gluon, sig, consts)
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=8))
        Path("/tmp/gluon_attn.cubin").write_bytes(compiled.asm["cubin"])
        usage = subprocess.run([binaries + "cuobjdump", "--dump-resource-usage", "/tmp/gluon_attn.cubin"],
                               capture_output=True, text=True).stdout
        print(block_m, block_n, stages, re.search(r"REG:\d+ STACK:\d+", usage).group(0), "smem",
              compiled.metadata.shared)


def measure(out_dir: str) -> None:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import rooftop
    from rooftop.bench.timing import bench_ms
    torch.manual_seed(0)
    rows, H, D = [], 16, 128
    for S in (2048, 4096, 16384):
        B = 16384 // S
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * B * H * S * S * D
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(q, k, v)
            cudnn_ms = bench_ms(lambda: F.scaled_dot_product_attention(q, k, v))
        rooftop.attention(q, k, v)  # tunes
        ours_ms = bench_ms(lambda: rooftop.attention(q, k, v))
        row = dict(S=S, B=B, cudnn_tflops=flops / cudnn_ms / 1e9, rooftop_tflops=flops / ours_ms / 1e9)
        for (block_m, block_n, stages), pin in [(c, True) for c in CONFIGS] + [(CONFIGS[1], False)]:
            name = f"gluon_{block_m}x{block_n}x{stages}" + ("" if pin else "_unpinned")
            try:
                o = attention_gluon(q, k, v, block_m, block_n, stages, pin_wait=pin)
                torch.cuda.synchronize()
                err = float((o.float() - ref.float()).norm() / ref.float().norm())
                ms = bench_ms(lambda: attention_gluon(q, k, v, block_m, block_n, stages, pin_wait=pin))
                row[name] = dict(tflops=flops / ms / 1e9, rel_err=err)
            except Exception as e:  # a config that fails is recorded, not fatal
                row[name] = dict(error=f"{type(e).__name__}: {str(e)[:300]}")
        rows.append(row)
        print(json.dumps(row), flush=True)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    Path(out_dir, "exp-gluon-attention.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="gluon-attention")
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args()
    if args.compile_only:
        compile_only()
    else:
        sys.exit(measure(args.out))
