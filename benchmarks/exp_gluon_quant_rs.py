r"""Experiment (issue 6): a W4A16 GEMM on Hopper in Gluon whose MMA warp groups dequantize the int4 weight straight
into the wgmma's register A operand (swap AB: out^T = W x^T), so that no dequantized tile goes through shared memory.

Why: ops/quant_matmul_sm90.py's kernel (dequantizer warp groups storing a bf16 B tile for consumer warp groups) is
bound by its shared-memory pipe at M = 64 (Nsight Compute, NOTES item 130: 32 KB of B stored and read again a
k-step at 256 columns, ~800 shared wavefronts a step, L1 75% busy, the dequantizers' most common stall the registers
held by their stores in flight); it runs ~1460 cycles a k-step where the MMA needs ~512. Here a warp group
dequantizes 64 weight rows x 64 k into registers laid out as the A operand of wgmma m64nBMk16 and multiplies them by
x^T (x's [BM, 64] TMA tile, the B operand): shared memory carries only x (read by each warp group's wgmma) and the
words (4 KB a step at 128 rows), about a quarter of the traffic.

What: out[M, N] = x[M, K] @ W^T (+ bias), W = dequantize(qw) of quantize_weight (int4, group 128, zero points or
symmetric, scales of x's dtype; the packed format unchanged: int32 words [K / 8, N], nibble i of word (j, n) the code
of k = 8 j + i). A tile of the output is BM rows of x by BLOCK_N = 64 x CONSUMERS weight rows; warp group c owns
weight rows 64 c .. 64 c + 63, its fp32 accumulator [64 n, BM m] (wgmma m64nBMk16, A from registers).
The A operand's register layout (mma v3, k_width 2): thread (warp w, lane l) holds rows n = 16 w + l / 4 (+ 8) and
k = 2 (l % 4) + {0, 1} (+ 8) of each 16-wide k block: the codes 2t and 2t + 1 (t = l % 4) of words (j, n), i.e.
byte t of each word, both nibbles. `_DQ_ASM` per word: z = w >> 4; one PRMT puts byte t of w in byte 0 and byte t
of z in byte 2; one LOP3 keeps the low nibbles and sets the magic exponent (bf16 0x4300 = 128: the pair 128 + c);
a packed fma subtracts 128 + z exactly, a packed multiply scales (rounded once): bit for bit dequantize(x.dtype).
5 instructions a word (2 codes) and one LDS.32 (each word is read by the 4 lanes of a quad: broadcast).
Per k-step a warp group: wait for the stage; load its words, scales (and zeros); dequantize; async wgmma (A =
registers, B = x's tile permuted to [64, BM]); wgmma wait(1): the previous step's MMA is done, release its stage.
A 1-warp loader fills the STAGES ring by TMA: per step x's [BM, 64] tile, the words [8, BLOCK_N], the group's row of
scales [1, BLOCK_N] (and zeros). Tiles and stream-K as quant_matmul_sm90 (its _schedule, _step, _next, _fixup).

Offline sm_90 (Triton 3.6): no spills in the k-loops (rs_m256n128: STACK 480, in its epilogue); k-loop 145-159
instructions a thread for 32 codes (4.7 a code: the dequantization 2.5, 16 LDS of words, scales and zeros, 4 HGMMA,
the waits, the loop). Two findings on the way: (1) a permuted view of the unswizzled words tile (memdesc_trans of an
NVMMA swizzle-0 layout) is not read as TMA wrote it (run 1: every result wrong, rel err 1.48); the words are now
loaded as [8 j, 64 n] and permuted in registers. (2) With the MMA of register A still in flight past the next
step's dequantization (wgmma wait(1), also with two steps an iteration and any .maxnreg), ptxas serialises every
wgmma ("insufficient register resources", C7512): the kernel waits for its MMA each step (wait(0)) and relies on the
other warp groups to overlap it.

Measured (H200, 2026-12-01, bf16, int4 group 128 with zero points, time_ms: graph replay, L2 flushed;
logs/h200-2026-12-01-s18/exp-quant-rs.log), us and x cuBLAS, against the library's Gluon variants (ws_*) of the same
run; every RS variant correct (rel err as the others):
                      4096^2        14336x4096    4096x14336    28672x8192
  M = 16  rs_m64n128  22.8 0.83x    37.8 1.09x    35.6 1.19x    93.5 1.36x   (ws_m64n128_sk 23.6 / 38.4 / 36.4 / 95.4)
  M = 64  rs_m64n128  21.8 0.84x    35.9 1.18x    36.1 1.25x    95.5 1.31x   (ws_m64n128_sk 23.0 / 36.9 / 37.0 / 98.2)
          rs_m64n256  32.5          38.0          47.3          88.2 1.42x   (ws_m64n256 47.4 / 48.1 / 140.6 / 87.3)
  M = 256 rs_m128n128 33.6 0.72x    74.4 0.65x    71.4 0.74x    236.3        (ws_m256n128(_sk) best 47.6 / 58.8 / 78.1 /
          rs_m256n128 52.1          78.5          81.3          202.9 0.88x   195.9)
So: within 2-4% of the store-through-shared-memory kernel at M = 16-64, better at M = 256 on 4096^2 and 4096 x
14336 (but not than the library's choices there: dequantize + cuBLAS at 4096^2). The shared-memory traffic was not
what bounded the kernel: Nsight Compute of rs_m64n128 at 64 x 28672 x 8192 (ncu-quant-rs-m64-*): L1 44%, L2 32%,
DRAM 23%, issue 44%; its consumer warps 21% issuing, 22% at barriers (the wgmma wait, the arrive's bar.sync), 15-22%
on fixed-latency dependencies: issue- and latency-bound with 2 consumer warps a scheduler (the x re-read from L2 a
tile, 2x the words' bytes at 128 rows, is not the limit either). Not taken into the library; what would move it:
fewer instructions a code (scales and zeros once a group, not a step; the 16 word loads as fewer, wider ones) and
the MMA left in flight (a ptxas that does not serialise it, or A written to fresh registers by construction).

Second form (run 3, exp-quant-rs-v2.log; "_v2" in that log): the A tile's rows permuted so that a thread's two rows are
adjacent weight rows (words by LDS.64, scales as one pair) and the scales read once a group: 132 instructions a
k-step (151 before), 3-5% faster than the first form, 5-9% faster than the library's store-through-shared-memory
variants at M = 64 (rs_m64n128 20.9 / 33.6 / 34.8 / 91.2 us, rs_m64n256 83.1 at 28672 x 8192: 1.54x cuBLAS), and
rs_m128n128 at M = 256 67.8 us at 4096 x 14336 (0.79x; those variants 77.6). That form is the library's since
(ops/quant_matmul_sm90.py: `_w4a16_rs_kernel`, RSVariant, QuantRSPlan, imported here; the first form is in git
history); this file keeps the experiment's variant table, the offline compile report and the GPU run.

Session 19 (logs/h200-2026-12-02-s19/):
- Tiles of 8-32 rows of x (SMALL_VARIANTS; wgmma n = 8-32) against quant_matmul tuned without Gluon (--library:
  its GEMV and mma.sync paths), L2 flushed (exp-quant-rs-small.log): all correct, none faster. 1 x 28672 x 8192: 8 x
  256 tiles 67.8 us, the library 48.4; 16 x 28672 x 8192: 16 x 256 tiles 68.6 (the 64-row tiles 80.2 in session 18),
  the library 59.4; at 14336 x 4096 / 4096 x 14336 30-31 us against 18.5-25.7. Predicted: the MMA's share of a step
  shrinks with n, so the dequantization alone bounds a step. Seen: a warp group's step stays serial (wait, dequantize,
  MMA, wait(0), arrive) and latency-bound at 4 warps a scheduler, whatever the MMA's size.
- What a call costs beside its k-steps (--shapes 14336x256,..; RING_VARIANTS; exp-quant-intercept.log): RS_M64_N128
  at M = 64, N = 14336: stream-K 19.3 / 19.0 / 33.8 us at K = 256 / 1024 / 4096, data-parallel (112 tiles on 132
  SMs) 9.7 / 14.1 / 30.0, a 3-stage ring 17.5 / 19.6 / 37.4; the harness's floor (one tiny kernel) 4.4 us. Stream-K
  costs ~4-9 us a call: at K = 4096 it gives each program 12% fewer steps than data-parallel and still loses 13%.
  Nsight Compute at K = 256 (ncu_pc_sampling.py rs_m64n128_k256): SMs active 13.2 of 26.3 k cycles on average
  (data-parallel 7.1 of 11.6). --grids (the stream-K variant over another grid) failed to compile on the GPU
  (exp-quant-grids-error.log): RSCall was handed the grid as its bias argument (fixed after the device time).
- The data-parallel 64 x 128 variant as a library candidate (exp-quant-dp.log): 29.8 us at 64 x 14336 x 4096 (1.44x
  cuBLAS; stream-K 33.8, 1.27x), slower where 32 tiles leave most SMs idle (4096^2: 27.9 against 21.1).

Session 20 (logs/h200-2026-12-02-s20/): --grids (exp-quant-sk-grids.log) and --probe none / no_atomic (the stream-K
fix-up swapped for a stand-in: no fix-up at all, or the partials' stores alone; exp-quant-sk-probe-*.log) put the
stream-K cost in the fix-up's counter and re-reads (NOTES item 141); the library's fix-up since then lets the tile's
head piece complete it (quant_matmul_sm90's docstring): RS_M64_N128 87.2 / 31.7 / 32.9 / 19.7 us at M = 64
(exp-quant-fixup.log; before 90.3 / 33.6 / ~35 / 21.2).

Usage:
  .venv/bin/python benchmarks/exp_gluon_quant_rs.py --compile-only     # no GPU: registers, spills, SASS loops
  PYTHONPATH=src:benchmarks python benchmarks/exp_gluon_quant_rs.py OUT_DIR   # H200: correctness, then timing
  [--batches 64 --shapes 14336x256,.. --variants rs_m64n128_s8_sk,.. --grids --probe none|no_atomic --library]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gluon_sm90 import compile_sm90, issues_wgmma, read_cubin, sass_loops  # noqa: E402
from rooftop.ops import quant_matmul_sm90 as qsm90  # noqa: E402
from rooftop.ops.quant_matmul_sm90 import GROUP, RSVariant  # noqa: E402

VARIANTS = (qsm90.RS_M64_N128, qsm90.RS_M64_N256, qsm90.RS_M128_N128, RSVariant(256, 2, 4, True, 232))
# session 19: tiles of 8-32 rows of x (wgmma n = 8-32) for M <= 32, deeper rings (a stage 7-13 KB)
SMALL_VARIANTS = (RSVariant(8, 4, 20, True, 120), RSVariant(8, 2, 24, True, 208), RSVariant(16, 4, 18, True, 120),
                  RSVariant(16, 2, 24, True, 208), RSVariant(32, 4, 14, True, 120), RSVariant(32, 2, 20, True, 208))
# rings of 2-12 stages and the data-parallel form of the 64 x 128 variant (what a call costs beside its k-steps;
# whether a stream-K fix-up waits for the ring's loads in flight)
RING_VARIANTS = (RSVariant(64, 2, 2, True, 208), RSVariant(64, 2, 3, True, 208), RSVariant(64, 2, 12, True, 208),
                 qsm90.RS_M64_N128_DP)
SHAPES = ((28672, 8192), (14336, 4096), (4096, 14336), (4096, 4096))  # the largest first (a budget cuts the last)


class RSCall:
    """x @ dequantize(qw).T by the register-A kernel with variant v (qsm90.QuantRSPlan, made once); a call allocates
    the output and launches once."""

    def __init__(self, x: torch.Tensor, qw, v: RSVariant, sms: int, bias=None, programs: int = 0):
        self.args = (x, qw.packed, qw.scales, qw.zeros, bias)
        self.plan = qsm90.QuantRSPlan(v, x, qw.packed, qw.scales, qw.zeros, bias, sms)
        if programs:  # another persistent grid than the plan's (stream-K shares the units among any number)
            self.plan.launch.grid = (programs,)
            self.plan.partials = programs * v.block_m * v.block_n

    def __call__(self) -> torch.Tensor:
        M, N, _ = self.plan.sizes
        out = torch.empty(M, N, device=self.args[0].device, dtype=self.args[0].dtype)
        self.plan(*self.args, out)
        return out


def _signature(v: RSVariant, has_zero: bool, dtype=torch.bfloat16) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) of the kernel for an offline compile, as a GPU launch on aligned tensors."""
    xt = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    types, boxes = dict(x=xt, w="i32", s=xt, z="u8"), v.boxes(dtype)
    sig = {}
    for k in "xwsz":
        kk = k if (k != "z" or has_zero) else "s"
        box, lay = boxes[kk]
        sig[f"{k}_desc"] = f"tensordesc<{types[kk]}{box},{lay!r}>"
    sig.update(out_ptr=f"*{xt}", bias_ptr=f"*{xt}", ws_ptr="*fp32", cnt_ptr="*i32", M="i32", N="i32", K="i32")
    consts = v.constexprs(has_zero, False)
    sig.update({name: "constexpr" for name in consts})
    names = list(sig)
    aligned = ("out_ptr", "bias_ptr", "ws_ptr", "cnt_ptr", "N", "K")
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    return sig, consts, attrs


def compile_only(variants=VARIANTS) -> None:
    for v in variants:
        for has_zero in (True, False):
            t0 = time.time()
            sig, consts, attrs = _signature(v, has_zero)
            compiled = compile_sm90(qsm90._w4a16_rs_kernel, sig, consts, attrs=attrs)
            cubin = read_cubin(compiled)
            loops = sass_loops(cubin.sass, issues_wgmma)
            inner = [b for s0, e0, b in loops if not any(s1 < s0 and e0 < e1 for s1, e1, _ in loops)]
            desc = "; ".join(f"{len(b)} instr, HGMMA {sum(x.startswith('HGMMA') for x in b)}, "
                             f"BAR {sum('BAR' in x for x in b)}, LDL/STL {sum(('LDL' in x) or ('STL' in x) for x in b)}"
                             for b in inner)
            print(f"{v.name} {'asym' if has_zero else 'sym'}: {cubin.resources}, smem {compiled.metadata.shared} "
                  f"(rings {v.smem_bytes(has_zero)}), LDL/STL {cubin.local_memory_ops}, maxnreg {cubin.maxnreg}; "
                  f"k-loops (a group, 2 steps): {desc} [{time.time() - t0:.0f} s]", flush=True)


@gluon.jit
def _fixup_none(acc, ws_ptr, cnt_ptr, offs, tile, start, k_tiles, total2, CONSUMER: gl.constexpr,
                CONSUMERS: gl.constexpr):
    """Probe: every piece stores itself as the tile (wrong results; what stream-K costs without its fix-ups)."""
    return acc, start >= 0


@gluon.jit
def _fixup_no_atomic(acc, ws_ptr, cnt_ptr, offs, tile, start, k_tiles, total2, CONSUMER: gl.constexpr,
                     CONSUMERS: gl.constexpr):
    """Probe: the partial's store and its thread barrier, no counter (wrong results). Every cut piece stores to its
    program's slot (the workspace holds one a program since session 20; session 20's run stored as many bytes into
    the two slots a program had then)."""
    SLOT: gl.constexpr = acc.shape[0] * acc.shape[1]
    gl.store(ws_ptr + (gl.program_id(0) * CONSUMERS + CONSUMER).to(gl.int64) * SLOT + offs, acc)
    gl.thread_barrier()
    return acc, start >= 0


# --probe: the library's stream-K fix-up replaced (before anything compiles) to time its parts
PROBES = dict(none=_fixup_none, no_atomic=_fixup_no_atomic)


def measure(out_dir: str, batches=(1, 16, 64), budget_s: float = 150.0, with_library: bool = False,
            shapes=SHAPES, names=None, grids: bool = False, probe: str = "") -> None:
    """Per shape and M: cuBLAS on the dequantized weight, exp_gluon_quant_ws.py's variants for M, then each RS variant
    (checked against x @ qw.dequantize(bf16).T, then timed: graph replay, L2 flushed)."""
    import torch.nn.functional as F

    from exp_gluon_quant_ws import VARIANTS as WS_VARIANTS, W4A16Call, _pick
    from gluon_sm90 import wait_or_exit
    from rooftop.ops import quant_matmul as qm
    from rooftop.ops._autotune import time_ms
    from rooftop.ops.quant_matmul import quantize_weight

    def library(x, qw):
        """quant_matmul tuned without the Gluon kernels (its GEMV, mma.sync and Triton paths): what M <= 16 ran
        before session 19."""
        qm.GLUON_ENABLED = False
        try:
            qm.quant_matmul(x, qw)
        finally:
            qm.GLUON_ENABLED = True
        return lambda: qm.quant_matmul(x, qw)

    os.makedirs(out_dir, exist_ok=True)
    t_start = time.monotonic()
    torch.manual_seed(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []

    def save():
        with open(f"{out_dir}/exp-gluon-quant-rs.json", "w") as f:
            json.dump(rows, f, indent=1)

    for N, K in shapes:
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5
        for zeros in ((True, False) if N == 4096 and K == 4096 else (True,)):
            qw = quantize_weight(w, 4, GROUP, symmetric=not zeros)
            w_dq = qw.dequantize(torch.bfloat16)
            for M in batches:
                if time.monotonic() - t_start > budget_s:
                    break
                x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
                ref = x.float() @ w_dq.float().t()
                cands = [("cublas", lambda: F.linear(x, w_dq))]
                if with_library and zeros and M <= 16:
                    cands.append(("library_triton", library(x, qw)))
                if zeros and M > 16:
                    cands += [(v.name, W4A16Call(x, qw, v, sms)) for v in WS_VARIANTS if _pick(v, M)]
                # variants named by --variants run at any M (session 54: 64-row tiles at M = 256 were never timed)
                cands += [(v.name, RSCall(x, qw, v, sms)) for v in VARIANTS + SMALL_VARIANTS + RING_VARIANTS
                          if (M / 2 <= v.block_m <= max(16, M)) or (names is not None and v.name in names)]
                if grids:  # the 64 x 128 stream-K variant over grids of tiles x S programs (S dividing a tile's
                    # groups: each program one piece of one tile, one fix-up), and over the SMs (the library's)
                    v = qsm90.RS_M64_N128
                    tiles, groups = v.tiles(M, N), K // GROUP
                    grid_sizes = sorted({tiles * s for s in range(1, 9) if groups % s == 0 and tiles * s <= sms}
                                        | {sms})
                    cands += [(f"{v.name}_p{p}", RSCall(x, qw, v, sms, programs=p)) for p in grid_sizes]
                cands = [c for c in cands if names is None or c[0] in names or c[0] == "cublas"
                         or (grids and "_p" in c[0])]
                base = None
                for name, fn in cands:
                    row = dict(shape=[M, N, K], zeros=zeros, provider=name)
                    rows.append(row)
                    try:
                        out = fn()
                        wait_or_exit(10.0, f"{name} at {row['shape']}", save)
                        torch.cuda.synchronize()
                        row["rel_err"] = float((out.float() - ref).norm() / ref.norm())
                        if probe and name != "cublas":
                            row["provider"] = f"{name}_{probe}"  # timed whatever its result
                        if not (row["rel_err"] < 3e-3 or probe):
                            row["error"] = "wrong result"
                        else:
                            row["us"] = time_ms(fn) * 1e3
                            base = row["us"] if name == "cublas" else base
                            row["vs_cublas"] = round(base / row["us"], 3) if base else None
                    except Exception as e:
                        cause = f" (from {type(e.__cause__).__name__}: {str(e.__cause__)[:600]})" if e.__cause__ else ""
                        row["error"] = f"{type(e).__name__}: {str(e)[:200]} .. {str(e)[-300:]}{cause}"
                    print(json.dumps(row), flush=True)
                    save()
    print(f"\n{'provider':28}" + "".join(f"{f'{M}x{N}x{K}':>17}" for M in batches for N, K in shapes))
    for p in dict.fromkeys(r["provider"] for r in rows):
        cells = {(r["shape"][0], r["shape"][1], r["shape"][2]): r for r in rows if r["provider"] == p and r["zeros"]}
        line = f"{p:28}"
        for M in batches:
            for N, K in shapes:
                r = cells.get((M, N, K), {})
                text = f"{r['us']:.1f} {r.get('vs_cublas') or 0:.2f}x" if "us" in r else r.get("error", "-")[:12]
                line += f"{text:>17}"
        print(line)
    print(f"total {time.monotonic() - t_start:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="gluon-quant-rs")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--batches", default="1,16,64")
    parser.add_argument("--budget", type=float, default=150.0)
    parser.add_argument("--library", action="store_true", help="M <= 16: quant_matmul tuned without Gluon too")
    parser.add_argument("--shapes", help="NxK,NxK (default: the four benchmark shapes)")
    parser.add_argument("--variants", help="variant names to run (default: those of each M)")
    parser.add_argument("--grids", action="store_true",
                        help="the 64 x 128 stream-K variant over grids of tiles x S programs too")
    parser.add_argument("--probe", choices=sorted(PROBES), help="time with the stream-K fix-up replaced (wrong "
                        "results; a process of its own: the kernels compile with the replacement)")
    args = parser.parse_args()
    if args.probe:
        qsm90._fixup = PROBES[args.probe]
    if args.compile_only:
        compile_only(VARIANTS + SMALL_VARIANTS)
    else:
        shapes = (tuple(tuple(map(int, s.split("x"))) for s in args.shapes.split(",")) if args.shapes
                  else SHAPES)
        measure(args.out, tuple(int(b) for b in args.batches.split(",")), args.budget, args.library, shapes,
                args.variants.split(",") if args.variants else None, args.grids, args.probe or "")
