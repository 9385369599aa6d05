r"""GEMM on Hopper (sm_90) in Gluon: a warp-specialised persistent kernel (CUTLASS's sm90 "warp-specialized"
schedules), one of the paths of rooftop.matmul (ops/matmul.py chooses it; this file holds the kernel and
its launch; benchmarks/exp_gluon_matmul.py tells how it was arrived at and times it).

Why Gluon: Triton 3.6 builds no warp-specialised partitions for the persistent TMA loop on sm_90, so one
instruction stream issues the TMA loads, waits for them, issues the wgmma and runs the epilogue, and every
tile's epilogue stalls the tensor cores. Gluon (triton.experimental.gluon) lets a program split that work.

The kernel: out = epilogue(a @ b), a [M, K] row-major, b [K, N] either row-major (N-major) or the
transposed view of a row-major [N, K] weight (K-major), 16-bit, fp32 accumulation. One persistent
program per SM walks the output tiles pid, pid + #SMs, .. in GROUP_M order (row tiles share B's panels in
L2). gl.warp_specialize splits a program into a 1-warp TMA loader (LOADER_REGS registers) and one or two
consumer warp groups (CONSUMER_REGS each, setmaxnreg) issuing async wgmma from a STAGES-deep ring of A
[rows, 64] and B [64, BLOCK_N] tiles (a K-major B tile [BLOCK_N, 64] is read through the transposed
shared-memory view). Per stage a "ready" mbarrier (TMA transaction bytes) and an "empty" one (a
consumer's release); no CTA-wide barrier after the fork. A consumer keeps one wgmma group in flight
(wait(1)) and then releases the stage of the previous k-step. Its epilogue runs matmul.py's `_epilogue`
(+ bias, activation, in fp32 on the accumulator), adds the residual tile that TMA brought into the
output's staging buffer under the mainloop's last RESIDUAL_LEAD k-steps, and stores through that buffer by
TMA; the store of one tile overlaps the next mainloop. Out-of-range rows, columns and the K tail: TMA
reads zeros and clips stores, so no dimension need be a multiple of the tile. Two kinds of variants:
  cooperative (`coop`): the consumers split a tile's rows (128 x 256: two 64 x 256 halves; 128 x 128
    with one warp group), each stage is released by every consumer (empty count = #consumers);
    128 x 192 and 128 x 160 (`wave_fit`) fill the SMs' waves where 128 and 256 columns do not (512 x 6144:
    128 tiles of 128 x 192 on 132 SMs, 192 of 128 x 128, 96 of 128 x 256). Gluon's tensors, buffers and
    TMA boxes are powers of two, so such a tile is two: a consumer holds accumulators of 128 and of 64 / 32
    columns (two wgmma groups a k-step), b's stage and the output's staging buffer are two buffers each,
    moved by TMA in boxes of 64 / 32 columns;
  ping-pong (`pingpong`): two consumers each own whole 128 x 128 tiles, alternately, over one ring
    (empty count 1); a pair of "turn" mbarriers lets a consumer start a tile's mainloop only once the
    other has waited for all of its own tile's stages (CUTLASS's order barrier), so one consumer's
    epilogue runs under the other's mainloop. The turn also guards the ring's phases: without it a
    consumer could wait on a stage's ready parity while that stage still holds the other consumer's
    older tile (one phase behind), and the wait would pass at once on stale data.
  stream-K (`streamk`, cooperative): where the tiles fill the SMs' last wave badly (512 x 10240 has 320
    tiles of 128 x 128: 2.4 waves on 132 SMs), the programs form groups of R = cdiv(M, BLOCK_M), one
    program per tile row, and the groups share the column panels x k-steps evenly; the R programs of a
    group read the same B tiles at about the same time, so B comes from DRAM once (an ungrouped split,
    each program its own run of tiles x k-steps, ran 0.5-0.8x slower: 132 programs at 132 different
    k-steps re-read B from DRAM). A tile cut between groups: each piece stores its fp32 partial to a
    workspace slot and counts itself in on the tile's arrival counter; the last to arrive sums the pieces
    in k order (deterministic), zeroes the counter, and runs the epilogue.

Traffic: a and b about once from DRAM (GROUP_M order), bias and the residual tile once per tile, the
output once; stream-K adds each cut tile's partials (fp32, written once and read once, mostly in L2), and
every piece of a cut tile brings in the residual tile (only the last uses it).
Measured (H200, bf16, 2026-12-01, session 9's tuned results file, graph replay against cuBLAS in the same
run; logs/h200-2026-12-01-s9/): 512 x 10240 x 8192 0.93x with stream-K (128 x 128; session 6's file: 0.87x);
512 x 6144 x 4096 0.89x (the TMA kernel chosen; 0.92x in session 6's file). Session 41 (2026-12-03,
benchmarks/probe_gemm_ncu.py): at 512 x 6144 x 4096 cuBLAS runs 192 x 128 tiles over 5 stages in 2-CTA clusters, 128
CTAs as the 128 x 192 variant here (4 stages); by Nsight Compute the SMs' active cycles are alike (55 K) and L2 is not
the limit (42% busy against cuBLAS's 64%); our CTAs end less evenly (64.3 K cycles elapsed against 60.9 K). Replayed
after do_bench's zeroing flush (L2 full of dirty lines) it runs 43.1 us against cuBLAS's 38.3, after a reading flush
37.8 against 37.0: the write-back of dirty lines under its loads costs this ring more; 3 stages 55.0 us. A 5-stage
ring (the epilogue stored from registers to free the staging buffers) gained 0.7 us there and lost 4.2 after the
reading flush: not kept. In the results harness (graph replay over input copies) 0.98-1.02x cuBLAS in three runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from rooftop.ops import matmul as matmul_ops  # its _tile_coords and _epilogue, resolved when a kernel compiles
from rooftop.ops._support import GluonLaunch, arrival_counters, await_previous, cdiv

BLOCK_K = 64  # 128 bytes of a 16-bit row: one 128-byte swizzled row of A
# a 1-warp loader sits in a warp group of its own: 128 * (2 * 232 + 40) = 64512 of the SM's 65536 registers
CONSUMER_REGS, LOADER_REGS = 232, 40
# The residual tile is asked for RESIDUAL_LEAD k-steps before a segment's end (at its first where it is shorter):
# early enough that its TMA load lands under the mainloop (a k-step of a 128 x 256 tile is ~0.8 us of an SM's
# tensor cores, the load ~1-2 us), late enough that the previous tile's stores have long read the staging buffers
# it lands in. Asked for at the segment's start (until session 52), it waited for those stores first: 3-7% slower
# than the plain GEMM at K = 4096 (H200, logs/h200-2026-12-04-s52/call-f).
RESIDUAL_LEAD = 4
_RESIDUAL_LEAD = gl.constexpr(RESIDUAL_LEAD)
STREAM_K_BELOW = 0.9  # wave efficiency under which the stream-K variants are timed
WAVE_FIT = 0.95  # the wave efficiency a wave-fitting width (Variant.wave_fit) reaches and 128 / 256 miss, to be timed
GL_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}


@dataclass(frozen=True)
class Variant:
    block_m: int
    block_n: int
    stages: int
    consumers: int
    pingpong: bool
    stream_k: bool = False  # cooperative only

    def __post_init__(self):
        if self.stream_k and (self.pingpong or self.wave_fit):
            raise ValueError(f"stream_k: cooperative power-of-two tiles only ({self})")
        hi, lo = self.n_pieces
        if not hi or hi & (hi - 1) or lo & (lo - 1):
            raise ValueError(f"block_n: a power of two from 128 or 128 + a power of two ({self})")

    @property
    def name(self) -> str:
        kind = "pingpong" if self.pingpong else "coop"
        return (f"{kind}_{self.consumers}wg_{self.block_m}x{self.block_n}x{BLOCK_K}_s{self.stages}"
                + ("_streamk" if self.stream_k else ""))

    @property
    def n_pieces(self) -> tuple[int, int]:
        """(hi, lo): the tile's columns as a power of two and a rest (0 or a power of two under 128), since
        Gluon's tensors, shared-memory buffers and TMA boxes are powers of two: 192 = 128 + 64, 160 = 128 + 32."""
        return self.block_n - self.block_n % 128, self.block_n % 128

    @property
    def wave_fit(self) -> bool:  # a width between the powers of two, for M x N that they split into waves badly
        return self.n_pieces[1] > 0

    @property
    def box_n(self) -> int:  # columns of b's and the output's TMA boxes: both pieces are whole boxes
        return self.n_pieces[1] or self.block_n

    @property
    def a_boxes(self) -> int:  # A boxes per stage: one per consumer when they split the rows
        return 1 if self.pingpong else self.consumers

    @property
    def consumer_rows(self) -> int:  # rows of a consumer's accumulator (and of an A box, an output box)
        return self.block_m // self.a_boxes

    def smem_bytes(self, itemsize: int, out_itemsize: int) -> int:
        """The ring and one output (and residual) staging buffer per consumer."""
        stage = itemsize * BLOCK_K * (self.block_m + self.block_n)
        return self.stages * stage + out_itemsize * self.consumers * self.consumer_rows * self.block_n

    def config(self) -> dict:
        """rooftop.matmul's launch configuration (JSON-able, for its tuner) of this variant."""
        return dict(KERNEL="gluon", BLOCK_M=self.block_m, BLOCK_N=self.block_n, num_stages=self.stages,
                    CONSUMERS=self.consumers, PINGPONG=self.pingpong, STREAM_K=self.stream_k)

    @staticmethod
    def of(config: dict) -> "Variant":
        return Variant(config["BLOCK_M"], config["BLOCK_N"], config["num_stages"], config["CONSUMERS"],
                       config["PINGPONG"], config.get("STREAM_K", False))


# Measured on the H200 (bf16, 2026-12-01; ops/matmul.py's docstring has the figures): 128 x 256 with two
# consumers is the fastest at 4096^3 / 8192^3, the one-consumer 128 x 128 ones at M = 512 and 2048^3.
VARIANTS = (
    Variant(128, 256, 3, 2, False),  # CUTLASS's cooperative 128 x 256: 2 x (64 x 256), 3 x 48 KB + 2 x 32 KB
    Variant(128, 128, 4, 1, False),  # one warp group, 128 x 128: 4 x 32 KB + 32 KB
    Variant(128, 128, 4, 2, True),   # ping-pong, two 128 x 128 tiles in flight: 4 x 32 KB + 2 x 32 KB
    Variant(128, 128, 5, 1, False),  # deeper ring: 5 x 32 KB + 32 KB
    # widths that fill the waves where 128 and 256 do not (timed()): 512 x 6144 has 128 tiles of 128 x 192 on
    # 132 SMs (97% of one wave), 512 x 10240 256 of 128 x 160 (97% of two); two consumers of 64 rows each
    Variant(128, 192, 4, 2, False),  # 4 x 40 KB + 2 x 24 KB
    Variant(128, 160, 5, 2, False),  # 5 x 36 KB + 2 x 20 KB
    # stream-K (where the tiles are not whole waves: 512 x 10240 = 320 tiles of 128 x 128 on 132 SMs)
    Variant(128, 256, 3, 2, False, True),
    Variant(128, 128, 5, 1, False, True),
)


@gluon.jit
def _schedule(M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, STREAM_K: gl.constexpr):
    """The program's work: (k_tiles, stream_k, total, start, end, segments). Data-parallel: tiles pid,
    pid + G, .. whole (G programs, at most one an SM). Stream-K (G a multiple of the R = cdiv(M, BLOCK_M)
    tile rows): program pid = g * R + r takes tile row r of its group g's share [start, end) of the
    `total` column panels x k-steps laid end to end (each group at least one step; otherwise it runs
    data-parallel), so the R programs that read the same B tiles read them at about the same time;
    `segments`: the pieces (whole tiles or parts) of the program's work."""
    rows = gl.cdiv(M, BLOCK_M)
    panels = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    programs = gl.num_programs(0)
    groups = gl.maximum(programs // rows, 1)
    total = panels.to(gl.int64) * k_tiles
    stream_k = STREAM_K and (groups * rows == programs) & (total >= groups)
    start = (gl.program_id(0) // rows).to(gl.int64) * total // groups
    end = (gl.program_id(0) // rows + 1).to(gl.int64) * total // groups
    if stream_k:
        segments = (gl.cdiv(end, k_tiles) - start // k_tiles).to(gl.int32)
    else:
        segments = gl.cdiv(rows * panels - gl.program_id(0), programs)
    return k_tiles, stream_k, total, start, end, segments


@gluon.jit
def _segment(local, M, N, k_tiles, stream_k, start, end, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
             GROUP_M: gl.constexpr):
    """The program's segment `local`: (pid_m, pid_n, k0, k1, it): the k-steps [k0, k1) of the tile
    (pid_m, pid_n), whose first is the program's ring step `it` (the loader's running count)."""
    rows = gl.cdiv(M, BLOCK_M)
    if stream_k:
        panel = start // k_tiles + local
        first = panel * k_tiles
        k0 = gl.maximum(start - first, 0)
        k1 = gl.minimum(end - first, k_tiles)
        return (gl.program_id(0) % rows, panel.to(gl.int32), k0.to(gl.int32), k1.to(gl.int32),
                (first + k0 - start).to(gl.int32))
    else:
        pid_m, pid_n = matmul_ops._tile_coords(gl.program_id(0) + local * gl.num_programs(0), rows,
                                               gl.cdiv(N, BLOCK_N), GROUP_M)
        return pid_m, pid_n, local * 0, k_tiles, local * k_tiles


@gluon.jit
def _load_b(b_desc, n, k, bar, dst, B_K_MAJOR: gl.constexpr):
    """TMA load of b's box at column n, k-step offset k."""
    if B_K_MAJOR:
        tma.async_copy_global_to_shared(b_desc, [n, k], bar, dst)
    else:
        tma.async_copy_global_to_shared(b_desc, [k, n], bar, dst)


@gluon.jit
def _loader(a_desc, b_desc, a_smem, b_smem, b_lo_smem, ready, empty, M, N, K, STAGES: gl.constexpr,
            A_BOXES: gl.constexpr, BLOCK_N: gl.constexpr, B_K_MAJOR: gl.constexpr, GROUP_M: gl.constexpr,
            STREAM_K: gl.constexpr):
    """Fills the ring in the program's (segment, k-step) order: step `it` goes to stage it % STAGES, its
    use it // STAGES of that stage; b's tile box by box, its first N_HI columns into b_smem, the rest (N_LO,
    if any) into b_lo_smem."""
    CONSUMER_ROWS: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    N_DIM: gl.constexpr = 0 if B_K_MAJOR else 1
    BOX_N: gl.constexpr = b_desc.block_type.shape[N_DIM]
    N_LO: gl.constexpr = BLOCK_N % 128  # Variant.n_pieces
    N_HI: gl.constexpr = BLOCK_N - N_LO
    BLOCK_M: gl.constexpr = CONSUMER_ROWS * A_BOXES
    k_tiles, stream_k, total, start, end, segments = _schedule(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STREAM_K)
    STAGE_BYTES: gl.constexpr = A_BOXES * a_desc.block_type.nbytes + BLOCK_N // BOX_N * b_desc.block_type.nbytes
    it = 0
    for local in range(segments):
        pid_m, pid_n, k0, k1, _ = _segment(local, M, N, k_tiles, stream_k, start, end, BLOCK_M, BLOCK_N, GROUP_M)
        for kk in range(k0, k1):
            stage = it % STAGES
            # use u may start once the consumers released use u - 1 (empty phase u - 1 completed); for
            # u = 0 the wait is for parity 1, which a fresh mbarrier reports as complete
            mbarrier.wait(empty.index(stage), ((it // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(stage), STAGE_BYTES)
            for box in gl.static_range(A_BOXES):
                tma.async_copy_global_to_shared(a_desc, [pid_m * BLOCK_M + box * CONSUMER_ROWS, kk * BLOCK_K],
                                                ready.index(stage), a_smem.index(stage * A_BOXES + box))
            for box in gl.static_range(N_HI // BOX_N):
                _load_b(b_desc, pid_n * BLOCK_N + box * BOX_N, kk * BLOCK_K, ready.index(stage),
                        b_smem.index(stage).slice(box * BOX_N, BOX_N, dim=N_DIM), B_K_MAJOR)
            if N_LO > 0:
                _load_b(b_desc, pid_n * BLOCK_N + N_HI, kk * BLOCK_K, ready.index(stage), b_lo_smem.index(stage),
                        B_K_MAJOR)
            it += 1


@gluon.jit
def _stream_k_fixup(acc, ws_ptr, cnt_ptr, pid_m, pid_n, k0, k1, k_tiles, start, total, rows,
                    CONSUMER: gl.constexpr, NUM_CONSUMERS: gl.constexpr):
    """(acc, final): the whole tile's sum when this segment [k0, k1) completes it, else acc unchanged and
    final False (see _schedule: the groups share `total` steps, this program's group from `start` on). A
    tile cut between groups: each piece stores its fp32 partial in the workspace slot (program, first or
    last segment of it, consumer) and counts itself in on the tile's arrival counter (per consumer); the
    last to arrive zeroes the counter for the next launch and sums the pieces in k order (the same bits
    whoever arrives last)."""
    final = (k0 == 0) & (k1 == k_tiles)
    if (k0 > 0) | (k1 < k_tiles):
        layout: gl.constexpr = acc.type.layout
        ROWS: gl.constexpr = acc.shape[0]
        COLS: gl.constexpr = acc.shape[1]
        offs = (gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout)), 1) * COLS
                + gl.expand_dims(gl.arange(0, COLS, layout=gl.SliceLayout(0, layout)), 0))
        groups = gl.num_programs(0) // rows  # group g's share starts at step g * total // groups:
        first_step = pid_n.to(gl.int64) * k_tiles
        first = ((first_step + 1) * groups - 1) // total  # the groups holding the panel's first, last k-step
        last = ((first_step + k_tiles) * groups - 1) // total
        slot = (start < first_step).to(gl.int64)  # 1: the program's last segment, 0: its first
        piece = (gl.program_id(0).to(gl.int64) * 2 + slot) * NUM_CONSUMERS + CONSUMER
        gl.store(ws_ptr + piece * (ROWS * COLS) + offs, acc)
        gl.thread_barrier()  # the warp group's partial is written before the arrival is published (release)
        counter = cnt_ptr + (pid_n * rows + pid_m) * NUM_CONSUMERS + CONSUMER
        final = gl.atomic_add(counter, 1, sem="acq_rel", scope="gpu") == last - first
        if final:
            gl.store(counter, 0)
            acc = gl.zeros_like(acc)
            for g in range(first, last + 1):  # .cg: other SMs wrote these, skip this SM's L1
                g_slot = (g * total // groups < first_step).to(gl.int64)
                g_piece = ((g * rows + pid_m) * 2 + g_slot) * NUM_CONSUMERS + CONSUMER
                acc += gl.load(ws_ptr + g_piece * (ROWS * COLS) + offs, cache_modifier=".cg")
    return acc, final


@gluon.jit
def _bias_act(acc, off_m, off_n, M, N, bias_ptr, bias_stride, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr):
    """matmul.py's bias and activation, in fp32 on the accumulator of output columns off_n.."""
    layout: gl.constexpr = acc.type.layout
    rows = off_m + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, layout))
    cols = off_n + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, layout))
    return matmul_ops._epilogue(acc, rows, cols, M, N, bias_ptr, bias_stride, bias_ptr, 0, 0, bias_ptr, 0,
                                bias_ptr, 0, False, HAS_BIAS, ACTIVATION, False, True)


@gluon.jit
def _stage_out(acc, c_buf, HAS_RESIDUAL: gl.constexpr):
    """acc (+ the residual tile that TMA brought into c_buf) into the staging buffer c_buf, cast; each thread
    reads and rewrites the same elements of the buffer: no barrier between."""
    if HAS_RESIDUAL:
        acc += c_buf.load(acc.type.layout).to(gl.float32)
    c_buf.store(acc.to(c_buf.dtype))


@gluon.jit
def _load_residual(res_desc, c_smem, c_lo_smem, res_ready, off_m, off_n, N_HI: gl.constexpr, N_LO: gl.constexpr):
    """The residual tile into the output's staging buffers by TMA, completing res_ready; first the previous tile's
    stores must have read those buffers (the issuing thread waits, the warp group's barrier passes that on)."""
    BOX_N: gl.constexpr = res_desc.block_type.shape[1]
    tma.store_wait(0)
    gl.thread_barrier()
    mbarrier.expect(res_ready, (N_HI + N_LO) // BOX_N * res_desc.block_type.nbytes)
    for box in gl.static_range(N_HI // BOX_N):
        tma.async_copy_global_to_shared(res_desc, [off_m, off_n + box * BOX_N], res_ready,
                                        c_smem.slice(box * BOX_N, BOX_N, dim=1))
    if N_LO > 0:
        tma.async_copy_global_to_shared(res_desc, [off_m, off_n + N_HI], res_ready, c_lo_smem)


@gluon.jit
def _consumer(c_desc, res_desc, bias_ptr, bias_stride, ws_ptr, cnt_ptr, a_smem, b_smem, b_lo_smem, c_smem, c_lo_smem,
              ready, empty, turn, res_ready, M, N, K, CONSUMER: gl.constexpr, NUM_CONSUMERS: gl.constexpr,
              PINGPONG: gl.constexpr, STAGES: gl.constexpr, BLOCK_N: gl.constexpr, B_K_MAJOR: gl.constexpr,
              GROUP_M: gl.constexpr, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, HAS_RESIDUAL: gl.constexpr,
              STREAM_K: gl.constexpr):
    """One warp group's accumulator [CONSUMER_ROWS, BLOCK_N] per segment; where BLOCK_N is no power of two
    (Variant.n_pieces), two: columns [0, N_HI) and [N_HI, BLOCK_N), split as b's stage (b_smem, b_lo_smem)
    and the output's staging buffer (c_smem, c_lo_smem) are, which TMA fills and drains box by box.
    Cooperative: every segment of the program, rows CONSUMER * CONSUMER_ROWS .. of its tile. Ping-pong: the
    program's tiles CONSUMER, CONSUMER + 2, .., whole, each mainloop entered on this consumer's turn."""
    CONSUMER_ROWS: gl.constexpr = c_desc.block_type.shape[0]
    BOX_N: gl.constexpr = c_desc.block_type.shape[1]
    N_LO: gl.constexpr = BLOCK_N % 128  # Variant.n_pieces
    N_HI: gl.constexpr = BLOCK_N - N_LO
    gl.static_assert(N_LO == 0 or not STREAM_K, "stream-K's fixup takes one accumulator: power-of-two tiles only")
    BLOCK_K: gl.constexpr = a_smem.shape[2]
    A_BOXES: gl.constexpr = 1 if PINGPONG else NUM_CONSUMERS
    A_SLOT: gl.constexpr = 0 if PINGPONG else CONSUMER
    BLOCK_M: gl.constexpr = CONSUMER_ROWS * A_BOXES
    FIRST_TILE: gl.constexpr = CONSUMER if PINGPONG else 0
    TILE_STEP: gl.constexpr = NUM_CONSUMERS if PINGPONG else 1
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, N_HI, 16])
    k_tiles, stream_k, total, start, end, segments = _schedule(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STREAM_K)
    for local in range(FIRST_TILE, segments, TILE_STEP):
        pid_m, pid_n, k0, k1, it = _segment(local, M, N, k_tiles, stream_k, start, end, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M + A_SLOT * CONSUMER_ROWS
        off_n = pid_n * BLOCK_N
        res_parity = ((local - FIRST_TILE) // TILE_STEP) & 1
        res_step = gl.maximum(k0, k1 - _RESIDUAL_LEAD)  # the k-step at which the residual tile is asked for
        if PINGPONG:  # my turn number local // 2: completion local // 2 of turn[CONSUMER]
            mbarrier.wait(turn.index(CONSUMER), (local // NUM_CONSUMERS) & 1)
        acc = gl.zeros([CONSUMER_ROWS, N_HI], gl.float32, acc_layout)
        if N_LO > 0:
            acc_lo = gl.zeros([CONSUMER_ROWS, N_LO], gl.float32, gl.NVMMADistributedLayout(
                version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, N_LO, 16]))
        for kk in range(k0, k1):
            if HAS_RESIDUAL:
                if kk == res_step:
                    _load_residual(res_desc, c_smem, c_lo_smem, res_ready, off_m, off_n, N_HI, N_LO)
            stage = it % STAGES
            mbarrier.wait(ready.index(stage), (it // STAGES) & 1)
            a_tile = a_smem.index(stage * A_BOXES + A_SLOT)
            b_tile = b_smem.index(stage)
            if B_K_MAJOR:
                b_tile = b_tile.permute((1, 0))
            acc = warpgroup_mma(a_tile, b_tile, acc, is_async=True)
            # the MMAs of the previous k-step have completed (one wgmma group per accumulator): its stage is
            # free (none before a segment's first)
            if N_LO > 0:
                b_lo = b_lo_smem.index(stage)
                if B_K_MAJOR:
                    b_lo = b_lo.permute((1, 0))
                acc_lo = warpgroup_mma(a_tile, b_lo, acc_lo, is_async=True)
                acc, acc_lo = warpgroup_mma_wait(2, deps=(acc, acc_lo))
            else:
                acc = warpgroup_mma_wait(1, deps=(acc, ))
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=kk > k0)
            it += 1
        if PINGPONG:  # every stage of my tile has been waited for: the other consumer may enter its mainloop
            mbarrier.arrive(turn.index(1 - CONSUMER))
        if N_LO > 0:
            acc, acc_lo = warpgroup_mma_wait(0, deps=(acc, acc_lo))
        else:
            acc = warpgroup_mma_wait(0, deps=(acc, ))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES))  # K > 0: matmul.py runs no TMA kernel at K = 0
        if STREAM_K:
            acc, final = _stream_k_fixup(acc, ws_ptr, cnt_ptr, pid_m, pid_n, k0, k1, k_tiles, start, total,
                                         gl.cdiv(M, BLOCK_M), CONSUMER, NUM_CONSUMERS)
        else:
            final = k1 == k_tiles  # always: a data-parallel segment is a whole tile
        if final:  # epilogue: bias and activation, then the residual
            acc = _bias_act(acc, off_m, off_n, M, N, bias_ptr, bias_stride, HAS_BIAS, ACTIVATION)
            if N_LO > 0:
                acc_lo = _bias_act(acc_lo, off_m, off_n + N_HI, M, N, bias_ptr, bias_stride, HAS_BIAS, ACTIVATION)
            if HAS_RESIDUAL:
                mbarrier.wait(res_ready, res_parity)
            else:
                # my previous tile's TMA stores must have read the staging buffers before they are overwritten
                # (the issuing thread waits, the warp group's barrier passes that on)
                tma.store_wait(0)
                gl.thread_barrier()
            _stage_out(acc, c_smem, HAS_RESIDUAL)
            if N_LO > 0:
                _stage_out(acc_lo, c_lo_smem, HAS_RESIDUAL)
            fence_async_shared()
            gl.thread_barrier()
            for box in gl.static_range(N_HI // BOX_N):
                tma.async_copy_shared_to_global(c_desc, [off_m, off_n + box * BOX_N],
                                                c_smem.slice(box * BOX_N, BOX_N, dim=1))
            if N_LO > 0:
                tma.async_copy_shared_to_global(c_desc, [off_m, off_n + N_HI], c_lo_smem)
        elif HAS_RESIDUAL:  # a piece that another program completes: its residual tile is not used
            mbarrier.wait(res_ready, res_parity)
    tma.store_wait(0)


@gluon.jit
def _matmul_ws_kernel(a_desc, b_desc, c_desc, res_desc, bias_ptr, bias_stride, ws_ptr, cnt_ptr, M, N, K,
                      STAGES: gl.constexpr, NUM_CONSUMERS: gl.constexpr, PINGPONG: gl.constexpr,
                      BLOCK_N: gl.constexpr, B_K_MAJOR: gl.constexpr, GROUP_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                      ACTIVATION: gl.constexpr, HAS_RESIDUAL: gl.constexpr, STREAM_K: gl.constexpr,
                      CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr, PDL: gl.constexpr):
    """Persistent warp-specialised GEMM: consumer 0 is the default partition (num_warps = 4), consumer 1 (if any)
    and the loader are workers. PDL: launched as a programmatic dependent (_support.pdl_options): the shared memory
    and barriers are set up before the wait for the kernel ahead, nothing global is touched before. res_desc: the
    residual's, laid out as the output's (c_desc itself, never read, without a residual). ws_ptr, cnt_ptr:
    stream-K's fp32 partials [programs, 2, NUM_CONSUMERS, CONSUMER_ROWS, BLOCK_N] and int32 arrival counters [tiles,
    NUM_CONSUMERS] (unread placeholders without STREAM_K). b's and the output's boxes may be narrower than BLOCK_N
    (Variant.box_n)."""
    A_BOXES: gl.constexpr = 1 if PINGPONG else NUM_CONSUMERS
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    CONSUMER_ROWS: gl.constexpr = c_desc.block_type.shape[0]
    N_LO: gl.constexpr = BLOCK_N % 128  # Variant.n_pieces
    N_HI: gl.constexpr = BLOCK_N - N_LO
    dtype: gl.constexpr = a_desc.dtype
    a_smem = gl.allocate_shared_memory(dtype, [STAGES * A_BOXES] + a_desc.block_type.shape, a_desc.layout)
    # b's and the output's columns [0, N_HI) in buffers of whole boxes, the rest (if any: one box) apart
    if B_K_MAJOR:
        b_smem = gl.allocate_shared_memory(dtype, [STAGES, N_HI, BLOCK_K], b_desc.layout)
    else:
        b_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, N_HI], b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [NUM_CONSUMERS, CONSUMER_ROWS, N_HI], c_desc.layout)
    if N_LO > 0:
        b_lo_smem = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
        c_lo_smem = gl.allocate_shared_memory(c_desc.dtype, [NUM_CONSUMERS] + c_desc.block_type.shape, c_desc.layout)
    else:  # placeholders, never read
        b_lo_smem = b_smem
        c_lo_smem = c_smem
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    res_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)  # the loader's expect; the TMA bytes complete the phase
        # one elected arrive per consumer warp group that read the stage
        mbarrier.init(empty.index(i), count=1 if PINGPONG else NUM_CONSUMERS)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
        mbarrier.init(res_ready.index(c), count=1)  # consumer c's expect; the residual tile's bytes
    fence_async_shared()
    await_previous(PDL)
    if PINGPONG:
        # consumer c's turn t waits for completion t of turn[c]: completion 0 of turn[0] is this arrive,
        # every later one the other consumer's pass; the turns alternate, so no turn barrier runs two
        # phases ahead of its waiter
        mbarrier.arrive(turn.index(0))

    # the partitions' arguments inline: a tuple bound to a name would turn its constexprs into tensors
    if NUM_CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer, (c_desc, res_desc, bias_ptr, bias_stride, ws_ptr, cnt_ptr, a_smem, b_smem, b_lo_smem,
                         c_smem.index(0), c_lo_smem.index(0), ready, empty, turn, res_ready.index(0), M, N, K, 0,
                         NUM_CONSUMERS, PINGPONG, STAGES, BLOCK_N, B_K_MAJOR, GROUP_M, HAS_BIAS, ACTIVATION,
                         HAS_RESIDUAL, STREAM_K)),
            (_consumer, (c_desc, res_desc, bias_ptr, bias_stride, ws_ptr, cnt_ptr, a_smem, b_smem, b_lo_smem,
                         c_smem.index(1), c_lo_smem.index(1), ready, empty, turn, res_ready.index(1), M, N, K, 1,
                         NUM_CONSUMERS, PINGPONG, STAGES, BLOCK_N, B_K_MAJOR, GROUP_M, HAS_BIAS, ACTIVATION,
                         HAS_RESIDUAL, STREAM_K)),
            (_loader, (a_desc, b_desc, a_smem, b_smem, b_lo_smem, ready, empty, M, N, K, STAGES, A_BOXES, BLOCK_N,
                       B_K_MAJOR, GROUP_M, STREAM_K)),
        ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (c_desc, res_desc, bias_ptr, bias_stride, ws_ptr, cnt_ptr, a_smem, b_smem, b_lo_smem,
                         c_smem.index(0), c_lo_smem.index(0), ready, empty, turn, res_ready.index(0), M, N, K, 0,
                         NUM_CONSUMERS, PINGPONG, STAGES, BLOCK_N, B_K_MAJOR, GROUP_M, HAS_BIAS, ACTIVATION,
                         HAS_RESIDUAL, STREAM_K)),
            (_loader, (a_desc, b_desc, a_smem, b_smem, b_lo_smem, ready, empty, M, N, K, STAGES, A_BOXES, BLOCK_N,
                       B_K_MAJOR, GROUP_M, STREAM_K)),
        ], [1], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Host side


def shared_layout(block: list[int], dtype: torch.dtype):
    return gl.NVMMASharedLayout.get_default_for(block, GL_DTYPES[dtype])


def boxes(v: Variant, b_k_major: bool) -> tuple[list[int], list[int], list[int]]:
    """TMA boxes of a, b and the output (and the residual)."""
    b_box = [v.box_n, BLOCK_K] if b_k_major else [BLOCK_K, v.box_n]
    return [v.consumer_rows, BLOCK_K], b_box, [v.consumer_rows, v.box_n]


def constexprs(v: Variant, b_k_major: bool, has_bias: bool, activation, has_residual: bool,
               pdl: Optional[dict] = None) -> dict:
    """The kernel's constexprs; pdl: _support.pdl_options' keywords (PDL and the launch's flag; None: off)."""
    return dict(STAGES=v.stages, NUM_CONSUMERS=v.consumers, PINGPONG=v.pingpong, BLOCK_N=v.block_n,
                B_K_MAJOR=b_k_major, GROUP_M=matmul_ops.GROUP_M, HAS_BIAS=has_bias, ACTIVATION=activation,
                HAS_RESIDUAL=has_residual, STREAM_K=v.stream_k, CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS,
                **(pdl or {"PDL": False}))


def stream_k_groups(v: Variant, M: int, N: int, K: int, num_sms: int) -> int:
    """Groups of cdiv(M, BLOCK_M) programs the stream-K schedule forms (see _schedule): as many as fit the SMs,
    at most one a k-step; under 2 no tile is cut (the variant then runs data-parallel, or on one group)."""
    return min(num_sms // cdiv(M, v.block_m), cdiv(N, v.block_n) * cdiv(K, BLOCK_K))


def timed(v: Variant, M: int, N: int, num_sms: int) -> bool:
    """Whether the tuner times variant v for an M x N output: stream-K only where its tiles fill the SMs'
    last wave less than STREAM_K_BELOW (elsewhere its partials cost and buy nothing) and at least two groups
    of tile rows fit the SMs (M <= 66 x 128 on 132 SMs); a wave-fitting width only where its tiles fill the
    waves to WAVE_FIT and 128- and 256-wide ones do not (512 x 6144: 97% against 73% on 132 SMs), so that
    the shapes that the powers of two fill pay no extra tuning."""
    def efficiency(block_n: int) -> float:
        return matmul_ops._wave_efficiency(cdiv(M, v.block_m) * cdiv(N, block_n), num_sms)

    if v.stream_k:
        return efficiency(v.block_n) < STREAM_K_BELOW and num_sms // cdiv(M, v.block_m) >= 2
    if v.wave_fit:
        return efficiency(v.block_n) >= WAVE_FIT > max(efficiency(128), efficiency(256))
    return True


class WarpSpecializedPlan:
    """The launch of _matmul_ws_kernel for one call's shapes and strides, called as matmul.py's plans are:
    (a, b, out, bias, residual, a_scale, b_scale), the scales None. a [M, K] row-major; b [K, N] with one
    unit stride (b_k_major: b = w.t() of a row-major [N, K] w); out [M, N] contiguous; residual None or
    [M, N] of out's dtype with unit column stride; every other stride and every base 16-byte aligned
    (matmul.py checks; a 3-D a, out or residual is passed at the address of the 2-D view the plan was
    made for). The first call compiles through Gluon's dispatch with checked descriptors; later ones launch
    the compiled kernel directly. Stream-K runs stream_k_groups() x cdiv(M, BLOCK_M) programs where that
    makes 2 groups or more (else min(num_sms, tiles), data-parallel); its workspace: fp32 partials (programs
    x 2 x the tile: at most 17 / 34 MB for 128 x 128 / 128 x 256 on 132 SMs) allocated per call, and the
    stream's arrival counters (_support.arrival_counters). pdl: _support.pdl_options' keywords (None: a plain
    launch)."""

    __slots__ = ("sizes", "launch", "partials", "counters", "device")

    def __init__(self, v: Variant, a: torch.Tensor, b: torch.Tensor, b_k_major: bool, out: torch.Tensor,
                 bias: Optional[torch.Tensor], residual: Optional[torch.Tensor], activation: Optional[str],
                 num_sms: int, pdl: Optional[dict] = None):
        M, K = a.shape
        N = b.shape[1]
        a_box, b_box, c_box = boxes(v, b_k_major)
        b_view = ([N, K], [b.stride(1), 1]) if b_k_major else ([K, N], [b.stride(0), 1])
        res_view = ([M, N], [residual.stride(0), 1]) if residual is not None else ([M, N], [N, 1])
        descriptors = [(shape, strides, box, shared_layout(box, t.dtype)) for t, (shape, strides), box in
                       ((a, ([M, K], [a.stride(0), 1]), a_box), (b, b_view, b_box), (out, ([M, N], [N, 1]), c_box),
                        (out, res_view, c_box))]
        tiles = cdiv(M, v.block_m) * cdiv(N, v.block_n)
        self.sizes = (M, N, K)
        self.device = a.device
        groups = stream_k_groups(v, M, N, K, num_sms)
        stream_k = v.stream_k and groups >= 2  # else the kernel finds no group to cut a tile with (_schedule)
        grid = groups * cdiv(M, v.block_m) if stream_k else min(num_sms, tiles)
        # stream-K's (elements of the partials, counters); without, float32 / int32 placeholders
        self.partials = grid * 2 * v.block_m * v.block_n if stream_k else 1
        self.counters = tiles * v.consumers if stream_k else 1
        self.launch = GluonLaunch(_matmul_ws_kernel, (grid,), descriptors, constexprs(
            v, b_k_major, bias is not None, activation, residual is not None, pdl), a.device.index)

    def __call__(self, a, b, out, bias, residual, a_scale=None, b_scale=None) -> None:
        partials = torch.empty(self.partials, device=self.device, dtype=torch.float32)
        self.launch((a, b, out, out if residual is None else residual), out if bias is None else bias,
                    0 if bias is None else bias.stride(0), partials, arrival_counters(self.device, self.counters),
                    *self.sizes)
