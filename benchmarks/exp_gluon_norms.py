"""Experiment: RMSNorm / LayerNorm (optionally with the residual add) of wide rows staged in shared memory by a
warp-specialised Gluon kernel, against rooftop's Triton kernels (run 1 also torch.compile).

Why: on the H200 (bf16, M * N = 2^27, % of a copy) rooftop's Triton kernels reach rms_norm 74 % at N = 65536,
add_rms_norm 87 %, layer_norm 70 / 64 % at 32768 / 65536, add_layer_norm 77 % at 65536 (90 %+ up to 16384):
their looped path re-reads each row from L2 in pass 2 and the on-chip path holds a row in registers with
nothing overlapping its load. The Gluon softmax (ops/softmax_sm90.py: a TMA loader warp filling a ring of
8192-element chunks, two consumer warp groups taking rows in turn) reached 89 % at 32768-65536; the kernel
tried here is ops/norm_sm90.py, the same scheme (its docstring: the rings, the residual's second ring and
loader, h written back over x's chunk, LayerNorm's second pass over shared memory).

Run 1 (H200, logs/h200-2026-12-01-s9/exp-gluon-norms-run1): new residuals that were not x + residual bit for
bit (add_layer_norm at every width, add_rms_norm at 16392 and with 8192-element chunks; tests-run5 stopped on
it). The ring protocol is right at the mbarrier level (norm_sm90's docstring argues it, the model below checks
it); a release (barrier, arrive) does not order the partition's shared-memory loads before the TMA write that
refills the buffer (another proxy): the fix fences each release (norm_sm90._release). The model now performs
each consumer's shared-memory accesses at a random later time unless a fence performs them, and tracks what
each buffer holds (x, h, the residual): it finds the unfenced kernel's stale reads at once, and none with the
fence.

Variants (Variant below): chunk size, ring buffers, and how many of them the residual's ring takes (the rest
hold x's chunks, a whole row plus what the loader may fetch of the next); the library's: norm_sm90.config(),
8192-element chunks (14 buffers, 10 + 4 with a residual) where they compile without spills, else 4096 (28,
24 + 4).

Offline sm_90 compile (Triton 3.6, --compile-only, 56 cases: four ops at 16392-65536, fp16, fp32 and no
parameters, row boxes; the fenced releases): no spills, no bare CTA barrier, setmaxnreg 240 for each 4-warp
consumer and 24 for the loaders' warp group, shared memory 224.4-224.6 KB. SASS instructions an element (a
consumer's chunk loop / elements a thread), bf16, N = 65536, 8192 (4096) chunks:
  rms_norm        pass 1 2.50 (2.75), pass 2 5.89 (6.25)                                        8.4 (9.0) a row
  add_rms_norm    pass 1 7.75 (8.34), pass 2 5.88 (6.22)                                        13.6 (14.6)
  layer_norm      pass 1 2.38 (2.62), deviations 4.41 (4.56), pass 2 8.66 (9.00)                15.4 (16.2)
  add_layer_norm  pass 1 7.67 (8.28), deviations 4.39 (4.53), pass 2 8.67 (8.97)                20.7 (21.8)
(N = 32776, 4096 chunks, row boxes: 9.6 / 15.3 / 17.1 / 22.7.) A release now costs a MEMBAR.ALL.CTA and a
FENCE.VIEW.ASYNC a chunk. 4 schedulers x 32 lanes issue 128 / (per row) elements a clock an SM: 15.3 / 9.4 /
8.3 / 6.2 against the 4 (2 with a residual) that 16 bytes a clock an SM (4225 GB/s / 132 SMs / 1.98 GHz)
needs. LayerNorm spills at 8192 with fp32 parameters, N % 8192 != 0 or row boxes (strided rows).

Prediction (run 2): every new residual bit-exact; 65536 with 8192 chunks as run 1's c8192 (rms_norm 89,
add_rms_norm 91, layer_norm 79, add_layer_norm 86-88) within 2 % if the fences cost little, 4096 chunks
(c4096_b28) below them as in run 1 (75-86); at 32768 Triton still ahead for rms_norm, add_rms_norm and
add_layer_norm unless the 8192 chunks close the gap (Gluon is timed there too: the dispatch rule's check).

Usage:
  .venv/bin/python benchmarks/exp_gluon_norms.py --compile-only   # no GPU: sm_90 registers / spills / setmaxnreg,
  # bare CTA barriers, SASS instructions per element of the consumer loops, and the two-ring protocol's model
  # H200 (under 2 minutes): per op and width (32768, 32776, 65536), each provider's output against the float64
  # reference and the new residual bit for bit, then do_bench (median, L2 flushed) as GB/s of the op's minimum
  # bytes and % of a copy of as many bytes in the same run: the Gluon kernel with the library's rings (and
  # 4096-element chunks at 65536; first launch under a 10 s watchdog), rooftop with the Gluon path off
  # (Triton), and which of the two rooftop's dispatch takes
  PYTHONPATH=src timeout 170 python benchmarks/exp_gluon_norms.py OUT_DIR
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

import torch

from gluon_sm90 import MBarrier, compile_sm90, main, read_cubin, results, sass_loops, step, wait_or_exit
from rooftop.ops import layer_norm as layer_norm_mod
from rooftop.ops import norm_sm90
from rooftop.ops import rms_norm as rms_norm_mod
from rooftop.ops import softmax_sm90
from rooftop.ops.softmax_sm90 import BOX_COLS, LOADER_REGS, RING_LAYOUT, consumer_regs

TOTAL_ELEMS = 1 << 27
OPS = ("rms_norm", "add_rms_norm", "layer_norm", "add_layer_norm")
# 32776: one 8-element vector past whole chunks (a last chunk almost all padding); 32768: where Triton's kernels
# won for three of the ops (run 1); 65536: where the chunk size is chosen
WIDTHS = (32768, 32776, 65536)
VARIANT_WIDTHS = (65536,)  # where the variants other than the library's are timed
SIMULATED_ROWS, SIMULATED_SEEDS = 6, 200


@dataclass(frozen=True)
class Variant:
    """Rings other than norm_sm90.config()'s; None: the library's choice."""
    chunk: int  # elements per ring buffer
    buffers: int  # ring buffers in all
    res_stages: int  # of them, the residual's (with a residual)

    def name(self, residual: bool) -> str:
        return f"c{self.chunk}_b{self.buffers}" + (f"_r{self.res_stages}" if residual else "")

    def rings(self) -> tuple[int, int, int]:
        return self.chunk, self.buffers, self.res_stages


LIBRARY = None
# 4096-element chunks at 65536 (the library's choice where 8192 spills), against the library's 8192
VARIANTS = (LIBRARY, Variant(norm_sm90.CHUNK, norm_sm90.BUFFERS, norm_sm90.RES_STAGES))
_PARAM_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _library_rings(op: str, N: int, param: str | None, flat: bool) -> tuple[int, int, int]:
    """norm_sm90.config()'s rings for op's [*, N] rows (flat: contiguous, else a row stride past N) and
    parameters of dtype `param` (None: none)."""
    layer, residual = _op_flags(op)
    x = torch.empty(2, N + (0 if flat else 64))[:, :N]
    t = None if param is None else torch.empty(0, dtype=_PARAM_DTYPES[param])
    return norm_sm90.config(x, x if residual else None, t, t, layer)


def _name(v, residual: bool) -> str:
    return "library" if v is None else v.name(residual)


def _op_flags(op: str) -> tuple[bool, bool]:
    """(layer, residual) of an op's name."""
    return op.endswith("layer_norm"), op.startswith("add_")


# ---------------------------------------------------------------------------------------------
# Offline check (no GPU)


def simulate_protocol(chunks: int, x_stages: int, r_stages: int, rows: int, seed: int, layer: bool,
                      fenced: bool = True) -> None:
    """norm_sm90's ring protocol for one program under a random interleaving of the loaders, the two consumers,
    the TMA landings (in any order) and the consumers' shared-memory accesses, which are performed some time
    after they are issued (a load queued behind the partition's global stores): raises on a deadlock, or when
    a value is not the one its reader expects. Values are tracked per buffer: x's chunk `it` as TMA lands it,
    h of chunk `it` once pass 1 writes it back over x's (with a residual, r_stages > 0), the residual's chunk;
    pass 1 reads x (and the residual), pass 2 and LayerNorm's deviations read h (or x). A load is checked
    when it is performed, a write of h is lost if a refill lands before it is performed (and overwrites the
    refill if performed after it). _release's fence performs the partition's accesses before the barrier and
    the arrive; fenced=False drops it (the kernel before the fix), which the model must catch. Mirrors _loader
    and _consumer step by step; actors yield True on progress, False while spinning on a barrier."""
    rng = random.Random(seed)
    rings = {"x": x_stages, "r": r_stages} if r_stages else {"x": x_stages}
    ready = {name: [MBarrier(1) for _ in range(n)] for name, n in rings.items()}
    empty = {name: [MBarrier(1) for _ in range(n)] for name, n in rings.items()}
    held = {name: [None] * n for name, n in rings.items()}  # (what, chunk) each buffer holds
    turn = [MBarrier(1), MBarrier(1)]
    in_flight: list = []  # TMA copies issued, not landed: (ring, buffer, chunk)
    pending: list[list] = [[], []]  # per consumer: shared-memory accesses issued, not performed

    def perform(access):
        kind, name, buf, value = access
        if kind == "read" and held[name][buf] != value:
            raise AssertionError(f"{name} buffer {buf}: read {value}, found {held[name][buf]}")
        if kind == "write":
            if held[name][buf] != ("x", value[1]):
                raise AssertionError(f"{name} buffer {buf}: h of chunk {value[1]} written over {held[name][buf]}")
            held[name][buf] = value

    def flush(who):
        while pending[who]:
            perform(pending[who].pop(0))

    def release(who, name, buf):
        if fenced:
            flush(who)
        empty[name][buf].arrive()

    def loader(name):
        stages = rings[name]
        for it in range(rows * chunks):
            while not empty[name][it % stages].passes(((it // stages) & 1) ^ 1):
                yield False
            in_flight.append((name, it % stages, it))
            yield True

    def wait(name, it):
        stages = rings[name]
        while not ready[name][it % stages].passes((it // stages) & 1):
            yield False

    def consumer(who):
        x_value = "h" if r_stages else "x"  # what x's buffer holds after pass 1
        for k, row in enumerate(range(who, rows, 2)):
            it = row * chunks
            while not turn[1 - who].passes((k + who + 1) & 1):
                yield False
            for c in range(chunks):  # pass 1
                buf = (it + c) % x_stages
                yield from wait("x", it + c)
                pending[who].append(("read", "x", buf, ("x", it + c)))
                if r_stages:
                    yield from wait("r", it + c)
                    pending[who].append(("read", "r", (it + c) % r_stages, ("r", it + c)))
                    release(who, "r", (it + c) % r_stages)
                    pending[who].append(("write", "x", buf, ("h", it + c)))
                yield True
            turn[who].arrive()
            for c in range(chunks if layer else 0):  # LayerNorm's deviations
                pending[who].append(("read", "x", (it + c) % x_stages, (x_value, it + c)))
                yield True
            for c in range(chunks):  # pass 2
                pending[who].append(("read", "x", (it + c) % x_stages, (x_value, it + c)))
                release(who, "x", (it + c) % x_stages)
                yield True
        flush(who)

    actors = [loader(name) for name in rings] + [consumer(0), consumer(1)]
    spinning: set = set()
    while actors or in_flight or pending[0] or pending[1]:
        late = [w for w in (0, 1) if pending[w]]
        pick = rng.randrange(len(actors) + (1 if in_flight else 0) + len(late))
        if pick >= len(actors) + (1 if in_flight else 0):  # a consumer's oldest access is performed
            perform(pending[late[pick - len(actors) - (1 if in_flight else 0)]].pop(0))
            continue
        if pick == len(actors):
            name, buf, it = in_flight.pop(rng.randrange(len(in_flight)))
            held[name][buf] = (name, it)
            ready[name][buf].arrive()
            spinning.clear()
            continue
        step(actors[pick], actors, spinning)
        if actors and not in_flight and not late and len(spinning) == len(actors):
            raise AssertionError(f"deadlock: {chunks} chunks a row, rings {rings}")


LOOP_COUNTS = {"TRYWAIT": r"SYNCS\.PHASECHK", "ARRIVE": r"SYNCS\.ARRIVE", "LDS.128": r"LDS\.128",
               "STS.128": r"STS\.128", "LDG.128": r"\bLDG\.E\S*\.128", "STG.128": r"STG\.E\S*\.128",
               "BAR.SYNC": r"BAR\.SYNC", "MEMBAR": r"MEMBAR", "FENCE": r"FENCE"}


def consumer_loops(sass: str, per_thread: int) -> list[tuple[str, int, float, dict]]:
    """The innermost consumer loops (the chunk loops: shared-memory vector loads, no nested loop of them) of
    the SASS, in address order: (pass, instructions, instructions an element, counts), per_thread elements of
    a chunk a thread. pass 1 waits for chunks, pass 2 releases them and stores, "1b" (LayerNorm's deviations)
    neither."""
    loops = [(s, e, body) for s, e, body in sass_loops(sass, lambda body: any("LDS.128" in t for t in body))]
    found = []
    for start, end, body in loops:
        if any(s >= start and e <= end and (s, e) != (start, end) for s, e, _ in loops):
            continue  # the row loop
        counts = {name: sum(bool(re.search(p, t)) for t in body) for name, p in LOOP_COUNTS.items()}
        kind = "1" if counts["TRYWAIT"] else "2" if counts["STG.128"] and counts["ARRIVE"] else "1b"
        found.append((kind, len(body), len(body) / per_thread, {k: n for k, n in counts.items() if n}))
    return found


def _compile(op: str, N: int, v: Variant | None = LIBRARY, dtype: str = "bf16", param: str | None = "bf16",
             flat: bool = True, parts: int = 1, quant: str | None = None, resident: bool | str = False):
    """sm_90 compile of op's kernel for [*, N] rows as the launch makes it: param the weight's (and bias's)
    dtype, None for none; flat=False: the [1, 256] boxes of strided rows; v None: the library's rings; parts > 1:
    the rows are parts of rows `parts` times wider (N per part); quant: rms_norm's quantized y ("fp8", "int8");
    resident: the weight and bias kept in shared memory (norm_sm90.RESIDENT_PARAMS), their buffers out of x's ring;
    "weight": the weight alone (norm_sm90.RESIDENT_ONE)."""
    quant_id, qmax = rms_norm_mod.QUANT_FORMATS[quant][1:] if quant else (0, 1.0)
    layer, residual = _op_flags(op)
    chunk, buffers, res_stages = _library_rings(op, N, param, flat) if v is None else v.rings()
    r_stages = res_stages if residual else 0
    flat = flat and N % chunk == 0
    box = [chunk // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
    keep_w = bool(resident) and param is not None
    keep_b = keep_w and layer and resident != "weight"
    kept = (keep_w + keep_b) * -(-N // chunk)
    consts = dict(LAYER=layer, HAS_RES=residual, HAS_W=param is not None, HAS_B=layer and param is not None,
                  EVEN=N % chunk == 0, FLAT=flat, CHUNK=chunk, CHUNKS=-(-N // chunk),
                  X_STAGES=buffers - r_stages - kept, R_STAGES=r_stages, PARTS=parts, QUANT=quant_id, QMAX=qmax,
                  LOADER_REGS=LOADER_REGS, LEAN=softmax_sm90.LEAN_BARRIERS, KEEP_W=keep_w, KEEP_B=keep_b,
                  CONSUMER_REGS=consumer_regs(norm_sm90.CONSUMERS, norm_sm90.CONSUMER_WARPS))
    desc = f"tensordesc<{dtype}{box},{RING_LAYOUT!r}>"
    y_dtype = {None: dtype, "fp8": "fp8e4nv", "int8": "i8"}[quant]
    sig = dict(x_desc=desc, r_desc=desc, y_ptr=f"*{y_dtype}", h_ptr=f"*{dtype}", w_ptr=f"*{param or dtype}",
               b_ptr=f"*{param or dtype}", scale_ptr="*fp32" if quant else f"*{dtype}",
               ws_ptr="*i64" if parts > 1 else f"*{dtype}",
               cnt_ptr="*i32" if parts > 1 else f"*{dtype}", M="i32", N8="i32", y_stride8="i32", h_stride8="i32",
               eps="fp32", w_offset="fp32")
    sig.update({name: "constexpr" for name in consts})
    aligned = {(i,): [["tt.divisibility", 16]] for i in (2, 3, 4, 5)}  # y, h, w, b 16-byte aligned (supports())
    return compile_sm90(norm_sm90._norm_kernel, sig, consts, norm_sm90.CONSUMER_WARPS, aligned), consts


def compile_only() -> None:
    """sm_90 compile of each op, width and variant: registers, spills, shared memory, setmaxnreg, bare CTA
    barriers, the consumer loops' instructions an element and the issue bound of a row's passes against what
    4.2 TB/s needs; the protocol model for each. Raises if a compile spills or has a bare CTA barrier."""
    for bad in (dict(chunks=9, x_stages=8, r_stages=0), dict(chunks=9, x_stages=8, r_stages=4),
                dict(chunks=16, x_stages=24, r_stages=4, fenced=False), dict(chunks=8, x_stages=14, r_stages=0,
                                                                             fenced=False)):
        try:  # the model must catch a deadlock (a row of x wider than x's ring) and the unfenced releases
            for seed in range(SIMULATED_SEEDS):
                simulate_protocol(rows=SIMULATED_ROWS, seed=seed, layer=False, **bad)
            raise RuntimeError(f"the protocol model missed a fault: {bad}")
        except AssertionError as e:
            print(f"protocol model catches {bad}: {e}")

    cases = [(op, N, LIBRARY, "bf16", "bf16", True) for op in OPS for N in WIDTHS + (16392, 40960)]
    cases += [(op, 65536, v, "bf16", "bf16", True) for v in VARIANTS[1:] for op in OPS]
    cases += [(op, N, LIBRARY, dtype, param, flat) for op in OPS for N in (65536, 32776)
              for dtype, param, flat in (("fp16", "fp16", True), ("bf16", "fp32", True), ("bf16", None, True),
                                         ("bf16", "bf16", False))]
    faults, modelled = [], set()
    for op, N, v, dtype, param, flat in cases:
        layer, residual = _op_flags(op)
        compiled, consts = _compile(op, N, v, dtype, param, flat)
        cubin = read_cubin(compiled)
        name = f"{op} N={N} {_name(v, residual)} x {dtype} params {param}{'' if flat else ' rowbox'}"
        print(f"{name} (chunk {consts['CHUNK']}, {consts['CHUNKS']} chunks/row, EVEN={consts['EVEN']}, "
              f"FLAT={consts['FLAT']}, rings {consts['X_STAGES']}+{consts['R_STAGES']}): {cubin.resources} smem "
              f"{compiled.metadata.shared}; setmaxnreg {cubin.maxnreg}; bare CTA barriers {cubin.bare_cta_barriers}; "
              f"LDL/STL {cubin.local_memory_ops}", flush=True)
        if cubin.bare_cta_barriers or (v is LIBRARY and (cubin.local_memory_ops or "STACK:0" not in cubin.resources)):
            faults.append(name)  # any bare barrier; spills in the library's configuration
        per_thread = consts["CHUNK"] // (32 * norm_sm90.CONSUMER_WARPS)
        loops = consumer_loops(cubin.sass, per_thread)
        for kind, size, per_elem, counts in loops[:len(loops) // 2]:  # the two consumers compile alike: one
            print(f"    pass {kind:2}: {size:4} instr a chunk, {per_elem:5.2f} an element; "
                  + ", ".join(f"{k} {n}" for k, n in counts.items()))
        row = sum(per_elem for _, _, per_elem, _ in loops[:len(loops) // 2])
        need = 16 / ((4 if residual else 2) * (2 if dtype in ("bf16", "fp16") else 4))  # elements/clk/SM at 16 B/clk
        print(f"    row: {row:.2f} instr an element: issue bound {128 / row:.1f} elements/clk/SM "
              f"(4 schedulers x 32 lanes), {need:.0f} needed at 16 B/clk/SM")
        rings = (consts["CHUNKS"], consts["X_STAGES"], consts["R_STAGES"], layer)
        if rings not in modelled:
            modelled.add(rings)
            for seed in range(SIMULATED_SEEDS):
                simulate_protocol(*rings[:3], SIMULATED_ROWS, seed, layer)
    print(f"protocol model: {SIMULATED_SEEDS} random interleavings of {SIMULATED_ROWS} rows per case, no deadlock, "
          "every value read and written as expected")
    if faults:
        raise SystemExit(f"bare CTA barriers, or spills of the library's configuration, in: {faults}")


# ---------------------------------------------------------------------------------------------
# GPU run


def _gluon(op: str, v: Variant | None, num_sms: int):
    """op's function of the registry's inputs by the Gluon kernel in variant v, None: the library's rings
    (outputs as the op returns)."""
    layer, residual = _op_flags(op)

    def run(*inputs):
        x, res, params = (inputs[0], inputs[1], inputs[2:]) if residual else (inputs[0], None, inputs[1:])
        y = torch.empty_like(x)
        h = torch.empty_like(x) if residual else None
        bias = params[1] if layer else None
        rings = None if v is None else v.rings()
        if not norm_sm90.supports(x, res, params[0], bias, y, h, layer, rings):
            raise ValueError(f"{_name(v, residual)} does not take N={x.shape[1]}")
        norm_sm90.norm_rows(x, res, params[0], bias, y, h, 1e-5 if layer else 1e-6, 0.0, layer, num_sms, rings)
        return (y, h) if residual else y
    return run


def _without_gluon(op: str, fn):
    """fn with the op module's Gluon path switched off: its Triton kernels."""
    module = layer_norm_mod if _op_flags(op)[0] else rms_norm_mod

    def run(*inputs):
        module.GLUON_ENABLED = False
        try:
            return fn(*inputs)
        finally:
            module.GLUON_ENABLED = True
    return run


def _dispatches_gluon(op: str, N: int) -> bool:
    """Whether rooftop's op takes the Gluon path for the experiment's bf16 [2^27 / N, N] rows."""
    layer, residual = _op_flags(op)
    x = torch.empty(TOTAL_ELEMS // N, N, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(N, device="cuda", dtype=torch.bfloat16)
    res = x if residual else None  # only shapes, strides and addresses count
    if layer:
        return layer_norm_mod.uses_gluon(x, res, w, w, x, res)
    return rms_norm_mod.uses_gluon(x, res, w, x, res)


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| (DESIGN.md), inf where out is not finite."""
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm())


def measure(out_dir: str) -> None:
    """Per op and width: each provider's outputs against the float64 reference and, with a residual, its new
    residual against (x + residual) rounded to x's dtype, bit for bit; then its time (do_bench: median, L2
    flushed between calls) as GB/s of the op's minimum bytes and as % of a copy of as many bytes timed in the
    same run."""
    from rooftop import registry
    from rooftop.bench.timing import bench_ms

    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-gluon-norms.json")
    tol = 1.5e-2  # bfloat16's (DESIGN.md)
    copy_ms: dict = {}

    def record(op, N, provider, fn, watchdog_s=None):
        spec = registry.get(op)
        M = TOTAL_ELEMS // N
        row = dict(op=op, N=N, M=M, provider=provider)
        rows.append(row)
        torch.manual_seed(N)
        inputs = spec.make_inputs((M, N), torch.bfloat16, "cuda")
        nbytes = spec.cost((M, N), torch.bfloat16).bytes
        if (op, N) not in copy_ms:
            src = torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8)
            dst = torch.empty_like(src)
            copy_ms[op, N] = bench_ms(lambda: dst.copy_(src))
            del src, dst
        try:
            out = fn(*inputs)  # compiles (host side), then launches
            if watchdog_s:
                wait_or_exit(watchdog_s, f"{provider} {op} at N={N}", save)
            ref = spec.reference(*inputs)
            outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
            row["rel_err"] = [_rel_err(o, r) for o, r in zip(outs, refs)]
            if _op_flags(op)[1]:  # the new residual: x + residual rounded once, every element
                h_ref = (inputs[0].float() + inputs[1].float()).to(torch.bfloat16)
                row["h_mismatches"] = int((outs[1] != h_ref).sum())
            del out, ref, outs, refs
            if max(row["rel_err"]) >= tol or row.get("h_mismatches", 0):
                row["error"] = "wrong result"
            else:
                row["ms"] = bench_ms(lambda: fn(*inputs))
                row["gbps"] = nbytes / row["ms"] / 1e6
                row["pct_copy"] = 100 * copy_ms[op, N] / row["ms"]
        except Exception as e:  # a provider that fails is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(row), flush=True)
        save()

    for op in OPS:
        spec = registry.get(op)
        residual = _op_flags(op)[1]
        for N in WIDTHS:
            for v in VARIANTS:  # the kernels first, each first launch under the watchdog
                if v is LIBRARY or N in VARIANT_WIDTHS:
                    record(op, N, f"gluon_{_name(v, residual)}", _gluon(op, v, num_sms), 10.0)
            record(op, N, "rooftop_triton", _without_gluon(op, spec.run))
            rows.append(dict(op=op, N=N, provider="dispatch", path="gluon" if _dispatches_gluon(op, N) else "triton"))
            print(json.dumps(rows[-1]), flush=True)
    save()
    _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    """% of copy per op, width and provider."""
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    print(f"\n{'op':>15} {'N':>6} " + " ".join(f"{p:>18}" for p in providers))
    for op in OPS:
        for N in WIDTHS:
            cells = {r["provider"]: r for r in rows if r["op"] == op and r["N"] == N}
            line = f"{op:>15} {N:>6} "
            for p in providers:
                r = cells.get(p, {})
                cell = r.get("path") or (f"{r['pct_copy']:5.1f}%" if "pct_copy" in r else r.get("error", "-")[:18])
                line += f"{cell:>18} "
            print(line)


if __name__ == "__main__":
    main("gluon-norms", compile_only, measure)
