"""Experiment: a warp-specialised persistent bf16 GEMM in Gluon (CUTLASS/FA3 style) against rooftop's Triton GEMM.

Why: rooftop.matmul's persistent TMA kernel (ops/matmul.py, `_matmul_tma_kernel`, after Triton's tutorial
09) trails cuBLAS on the H200 at M = 512 (0.83-0.87x at N x K = 4096 x 4096, 10240 x 8192, 6144 x 4096)
and at 2048^3 (0.94x), not at 4096^3 / 8192^3 (0.98x / 1.01x). Triton 3.6 builds no warp-specialised
partitions for that loop on sm_90, so one instruction stream issues the TMA loads, waits for them, issues
the wgmma and runs the epilogue, and every tile's epilogue stalls the tensor cores. Gluon
(triton.experimental.gluon) lets a kernel split the work as CUTLASS's sm90 "warp-specialized" kernels do.

What: the kernel of src/rooftop/ops/matmul_sm90.py (its docstring describes the partitions, the ring and the
cooperative / ping-pong variants), a path of rooftop.matmul; this script compiles and times its variants.

Prediction: the loader runs STAGES k-steps ahead and no consumer waits on its own issue of loads, so at
4096^3 / 8192^3 the 128 x 256 cooperative kernel should match cuBLAS (~700 TFLOP/s) and rooftop. At
M = 512 the tile count rules: 512 x 4096 has 64 tiles of 128 x 256 on 132 SMs (half the SMs idle) and
128 of 128 x 128, 512 x 6144 96 / 192, 512 x 10240 160 / 320 (1.2 / 2.4 waves), so there the 128 x 128
variants should win, ping-pong most (its epilogue hides under the other warp group's mainloop); if they
stay at rooftop's ~0.85x cuBLAS, the gap is wave quantisation (cuBLAS's split-K / stream-K), not the
mainloop. Timing: CUDA-graph replay over copies of the inputs that together exceed L2.

Offline sm_90 compile (Triton 3.6, 2026-12-01): no spills; setmaxnreg 232 per consumer, 40 for the loader
(1-consumer variants: 256 / 40); shared memory 213 KB (128 x 256, 3 stages), 164 / 197 KB (128 x 128, 4 / 5
stages), 197 KB (ping-pong); each k-step loop holds its HGMMAs (4 of 64x256x16, or 8 of 64x128x16), one
`WARPGROUP.DEPBAR.LE gsb0, 0x1`, the ready wait and the empty arrive, and two bar.syncs of its own warp
group (named barrier, 128 threads) that Triton's shared-memory barrier analysis puts before the mbarrier
wait and arrive: warp-group local, no CTA-wide barrier.

Measured (H200, bf16, 2026-12-01, logs/h200-2026-12-01-s8/exp-gluon-matmul.log), TFLOP/s (x cuBLAS):
512 x 4096 x 4096: coop_1wg_s5 702 (0.98x), coop_1wg_s4 663, pingpong 660, coop_2wg 409, rooftop 607
(0.85x); 512 x 10240 x 8192: coop_1wg_s5 596 (0.86x), rooftop 570 (0.82x); 512 x 6144 x 4096: coop_2wg
570 (0.86x), rooftop 547 (0.83x); 2048^3: coop_1wg_s4 679 (1.02x), rooftop 632 (0.95x); 4096^3:
coop_2wg 695 (1.07x), rooftop 653 (1.00x); 8192^3: coop_2wg 685 (1.06x), rooftop 661 (1.03x). Every
variant right (rel. err. 1.7e-3 against fp32). M = 512 stays at ~0.86x cuBLAS but for 4096 x 4096:
wave quantisation, as predicted; the mainloop itself matches cuBLAS.

(The 128 x 192 and 128 x 160 variants added for issue 4: benchmarks/exp_matmul_wave.py.)

With rooftop.matmul's fused epilogue (matmul_sm90, --compile-only, same day): no spills with no
epilogue, bias + SiLU, a residual, or b K-major; REG 168 at launch for the two-consumer variants, 255
for the one-consumer ones; shared memory as above plus 16-40 bytes of mbarriers; the k-step loops as
before (51-67 instructions: the HGMMAs, one DEPBAR 0x1, the ready wait and empty arrive, two warp-group
bar.syncs; the loop report now also lists each tile loop around them). The erf GELU spills in every variant (56-408 bytes: rooftop.matmul
lists no Gluon candidate with it); SiLU or tanh GELU with a residual 8-24 bytes, a loop-invariant value
stored before the k-step loop and reloaded in the epilogue, once per tile.

Usage:
  .venv/bin/python benchmarks/exp_gluon_matmul.py --compile-only   # no GPU: sm_90 registers / spills / smem, SASS
  # H200: checks each variant against an fp32 matmul, then times the variants, rooftop.matmul (tuned, the
  # Gluon variants among its candidates; and with matmul.GLUON_ENABLED = False) and cuBLAS at SHAPES, and
  # matmul + bias + SiLU at 4096^3 (the variants and rooftop with the fused epilogue, cuBLAS followed by the
  # eager epilogue); each variant's first launch runs under a 10 s watchdog (exit 124 on a deadlock,
  # results so far saved)
  PYTHONPATH=src timeout 590 python benchmarks/exp_gluon_matmul.py OUT_DIR
"""
from __future__ import annotations

import json
import re

import torch
import torch.nn.functional as F

from gluon_sm90 import compile_sm90, issues_wgmma, main, read_cubin, results, sass_loops, wait_or_exit
from rooftop.ops import _autotune
from rooftop.ops import matmul as matmul_ops
from rooftop.ops.matmul_sm90 import (VARIANTS, Variant, WarpSpecializedPlan, _matmul_ws_kernel, boxes, constexprs,
                                     shared_layout)

SHAPES = ((512, 4096, 4096), (512, 10240, 8192), (512, 6144, 4096), (2048, 2048, 2048), (4096, 4096, 4096),
          (8192, 8192, 8192))  # M, N, K
EPILOGUE_SHAPE = (4096, 4096, 4096)  # matmul + bias + SiLU
L2_FLUSH_BYTES = 200 << 20  # input copies cycled per timing: 4x the H200's 50 MB L2
GRAPH_CALLS = 24  # GEMMs per graph replay (at least 2 per input copy)
# offline compiles: (b K-major, bias, activation, residual)
COMPILE_EPILOGUES = ((False, False, None, False), (False, True, "silu", False), (False, False, None, True),
                     (True, False, None, False))


def matmul_ws(v: Variant, num_sms: int, activation=None):
    """gemm(a, b[, bias]) -> a @ b (+ bias, activation) by the warp-specialised kernel, variant v: a [M, K]
    and b [K, N] row-major bf16; one plan per shape (the compiled kernel launched directly after the
    first call)."""
    plans: dict[tuple, WarpSpecializedPlan] = {}

    def gemm(a: torch.Tensor, b: torch.Tensor, bias=None) -> torch.Tensor:
        out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
        key = (a.shape, b.shape, bias is None)
        if key not in plans:
            plans[key] = WarpSpecializedPlan(v, a, b, False, out, bias, None, activation, num_sms)
        plans[key](a, b, out, bias, None)
        return out

    return gemm


# ---------------------------------------------------------------------------------------------
# Offline check (no GPU)


def _loop_report(sass: str) -> list[str]:
    """One line per loop that issues wgmma: its HGMMA, wgmma waits, mbarrier (SYNCS) ops and bar.syncs
    (with their barrier id and thread count)."""
    reports = []
    for start, end, body in sass_loops(sass, issues_wgmma):
        bars = sorted({re.sub(r"BAR\.SYNC\.DEFER_BLOCKING ", "", t) for t in body if "BAR.SYNC" in t})
        reports.append(f"loop {start:#x}-{end:#x} ({len(body)} instr): "
                       f"HGMMA {sum(t.startswith('HGMMA') for t in body)}, "
                       f"DEPBAR {[t.split()[-1] for t in body if t.startswith('WARPGROUP.DEPBAR')]}, "
                       f"SYNCS {sum('SYNCS' in t for t in body)}, "
                       f"BAR.SYNC {sum('BAR.SYNC' in t for t in body)} x {bars}")
    return reports


def compile_only(variants=VARIANTS) -> None:
    """sm_90 compile of each variant with each of COMPILE_EPILOGUES: registers, spills (stack), shared
    memory, setmaxnreg values, and the wgmma loops of the SASS."""
    for v in variants:
        for b_k_major, bias, activation, residual in COMPILE_EPILOGUES:
            a_box, b_box, c_box = boxes(v, b_k_major)
            sig = {name: f"tensordesc<bf16{box},{shared_layout(box, torch.bfloat16)!r}>"
                   for name, box in (("a_desc", a_box), ("b_desc", b_box), ("c_desc", c_box), ("res_desc", c_box))}
            sig.update(bias_ptr="*bf16", bias_stride="i32", ws_ptr="*fp32", cnt_ptr="*i32", M="i32", N="i32", K="i32")
            consts = constexprs(v, b_k_major, bias, activation, residual)
            sig.update({name: "constexpr" for name in consts})
            compiled = compile_sm90(_matmul_ws_kernel, sig, consts)
            cubin = read_cubin(compiled)
            what = ", ".join(filter(None, ("b K-major" if b_k_major else "b N-major", "bias" if bias else "",
                                           activation, "residual" if residual else "")))
            print(f"{v.name} ({what}): {cubin.resources} smem {compiled.metadata.shared} (ring + C "
                  f"{v.smem_bytes(2, 2)}) setmaxnreg {cubin.maxnreg} bare BAR.SYNC 0x0: {cubin.bare_cta_barriers}",
                  flush=True)
            for line in _loop_report(cubin.sass):
                print("   ", line)


# ---------------------------------------------------------------------------------------------
# GPU run


def measure(out_dir: str) -> None:
    """Per problem: each provider's result against an fp32 reference, then its GPU time from CUDA-graph
    replay (no host launch cost: a Gluon launch from Python takes about as long as the 24 us of the
    512 x 4096 x 4096 GEMM) over copies of the inputs that together exceed L2 (cold operands)."""
    import rooftop
    from rooftop.bench.timing import bench_ms, graph_replay_us

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference in full precision
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-gluon-matmul.json")

    def rooftop_triton(*args):  # the Triton kernels alone (the Gluon kernel off): a key tuned of its own
        matmul_ops.GLUON_ENABLED = False
        try:
            return rooftop.matmul(*args)
        finally:
            matmul_ops.GLUON_ENABLED = True

    problems = [(shape, None) for shape in SHAPES] + [(EPILOGUE_SHAPE, "silu")]
    for (M, N, K), activation in problems:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        inputs = (a, b) if activation is None else (a, b, torch.randn(N, device="cuda", dtype=torch.bfloat16))
        ref = a.float() @ b.float()
        if activation is not None:
            ref = F.silu(ref + inputs[2].float())
        flops = 2 * M * N * K
        per_copy = sum(t.numel() * t.element_size() for t in inputs)
        copies = [inputs] + [tuple(t.clone() for t in inputs) for _ in range(-(-L2_FLUSH_BYTES // per_copy) - 1)]
        repeat = max(2, GRAPH_CALLS // len(copies))
        problem = f"{M}x{N}x{K}" + ("" if activation is None else " + bias + silu")

        def record(provider, gemm, watchdog_s=None):
            row = dict(shape=[M, N, K], epilogue=activation and "bias_silu", provider=provider)
            rows.append(row)
            try:
                c = gemm(*inputs)  # compiles or tunes (host side), then launches
                if watchdog_s:
                    wait_or_exit(watchdog_s, f"{provider} at {problem}", save)
                torch.cuda.synchronize()
                row["rel_err"] = float((c.float() - ref).norm() / ref.norm())
                if row["rel_err"] < 1e-2:
                    calls = [lambda x=x: gemm(*x) for x in copies]
                    try:
                        row["ms"], row["timing"] = graph_replay_us(calls, repeat) / 1e3, "graph, cold L2"
                    except Exception:  # not capturable: per-call events, L2 flushed (host cost included)
                        row["ms"], row["timing"] = bench_ms(calls[0]), "do_bench"
                    row["tflops"] = flops / row["ms"] / 1e9
                else:
                    row["error"] = "wrong result"
            except Exception as e:  # a provider that fails is recorded, not fatal
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(json.dumps(row), flush=True)
            save()

        for v in VARIANTS:  # the kernels directly, each first launch under the watchdog
            record(v.name, matmul_ws(v, num_sms, activation), 10.0)
        if activation is None:
            record("rooftop", rooftop.matmul)  # its first call tunes (the Gluon variants among the candidates)
            record("rooftop_triton", rooftop_triton)
            record("cublas", torch.matmul)
        else:
            record("rooftop", lambda x, y, bias: rooftop.matmul(x, y, bias, activation))
            record("rooftop_triton", lambda x, y, bias: rooftop_triton(x, y, bias, activation))
            record("cublas", lambda x, y, bias: matmul_ops.matmul_eager(x, y, bias, activation))  # + 2 kernels
        bucket = "|".join(str(_autotune.bucket(n)) for n in (M, N, K))
        chosen = [c for (_, entry), c in _autotune._memory.items() if entry.startswith(f"matmul|{bucket}|")]
        print(f"{problem}: rooftop's tuned choices {chosen}", flush=True)
        del ref, copies
    _print_table(rows, problems)


def _print_table(rows: list[dict], problems) -> None:
    """TFLOP/s per problem and provider, and the ratio to cuBLAS of the same run."""
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    print(f"\n{'M x N x K':>28}" + "".join(f" {p:>30}" for p in providers))
    for (M, N, K), activation in problems:
        epilogue = activation and "bias_silu"
        cells = {r["provider"]: r for r in rows if r["shape"] == [M, N, K] and r["epilogue"] == epilogue}
        cublas = cells.get("cublas", {}).get("tflops")
        line = f"{M}x{N}x{K}{' + bias + silu' if activation else ''}".rjust(28)
        for p in providers:
            t = cells.get(p, {}).get("tflops")
            cell = "-" if t is None else f"{t:4.0f} TF/s" + (f" ({t / cublas:4.2f}x cuBLAS)" if cublas else "")
            line += f" {cell:>30}"
        print(line)


if __name__ == "__main__":
    main("gluon-matmul", compile_only, measure)
