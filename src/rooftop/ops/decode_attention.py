r"""Decode attention (split-KV, "flash-decoding"): the attention of a sequence's few new query tokens over
its KV cache, contiguous or paged.

For sequence b with L_b = cache_seqlens[b] keys in its cache (the Sq new tokens' own included: they sit at
positions L_b - Sq .. L_b - 1), query i (0 <= i < Sq) of head h sees the keys j <= L_b - Sq + i of kv head
h // (Hq / Hkv) (causal among the new tokens; with Sq = 1 every key of the cache), and with a key_mask only those
with key_mask[b, j] (a model's padding or window mask; the kernel reads a mask byte a key it loads, but with
key_mask_bounds(key_mask, cache_seqlens): it starts at the tile of a sequence's first seen key, and reads no mask byte
where the mask is exactly the keys from there to L_b, as left padding and windows are). With
s_j = scale * q . k_j (scale defaults to 1/sqrt(D)),

    lse = log sum_j exp(s_j)          out = sum_j exp(s_j - lse) v_j

A query that sees no key (L_b = 0, or L_b < Sq - i) gets out 0 and lse -inf, never NaN. lse is fp32,
natural log. Without a mask this equals attention(q, k[:, :, :L_b], v[:, :, :L_b], causal=True) per sequence.
Attention sinks (gpt-oss): a logit sinks[h] a query head joins the softmax with and no value, so

    lse = log(exp(sinks[h]) + sum_j exp(s_j))          out = sum_j exp(s_j - lse) v_j

(a query that sees no key: out 0, lse sinks[h]); the row's store (or its splits' merge) adds it once.
Soft-capping (Gemma 2): softcap = c > 0 makes each s_j c tanh(s_j / c) before the mask (attention's soft_cap).

The caches (any strides with a unit last one):
- contiguous: k_cache, v_cache [B_cache, Hkv, S_max, D], B_cache >= B (Hugging Face's StaticCache layout):
  key j of sequence b at [b, :, j];
- paged: k_cache, v_cache [pages, Hkv, page_size, D] with block_table int32 [B, pages_per_seq]: key j of
  sequence b at [block_table[b, j // page_size], :, j % page_size]. flash-attn's and vLLM's
  [pages, page_size, Hkv, D] is this layout's .transpose(1, 2).
cache_seqlens (int32 [B], on the device) is clamped to [0, capacity] (S_max, or pages_per_seq * page_size) in
the kernel, so that a wrong length never reads outside the cache (checking it would cost a host sync a call);
block_table entries are not checked.
fp8 caches (torch.float8_e4m3fn, vLLM's kv_cache_dtype "fp8"): key j is its code times k_scale, value j its code
times v_scale (per-tensor floats). The kernel widens each tile's codes exactly (e4m3's 3-bit mantissa and range fit
fp16 and fp32; a bf16 q goes to fp16 once a program, scaled by a power of two, exactly but for elements 2^28 times
smaller than its largest) before the same dots, k_scale folded into the scores' scale and v_scale into the accumulator
once a row: half the bytes of a 16-bit cache. append_kv writes codes of k / k_scale (quantize_kv: times 1 / k_scale in
fp32, saturated at +-448, to nearest).

The kernel: one program per (sequence, kv head, tile of query rows, split of the keys). A program's query
rows are the GROUP = Hq / Hkv heads that share its kv head times the Sq new tokens (GQA packing: each k/v
tile read serves all of them, and the scores are one tensor-core dot of BLOCK_M >= 16 rows; heads up to 512, past
attention's 256, as Gemma 4's full layers have: 16 rows a program there, its fp32 accumulator 64 registers a thread).
A sequence's keys are cut into num_splits ranges of whole BLOCK_N tiles sized by its own length, which the kernel
reads on the device: one launch serves sequences of any lengths, and a CUDA graph replays as the caches grow.
Each program runs an online softmax over its range (fp32 running max m and sum l, exp2 with scale * log2(e) folded
into the scores). Where its sequence's keys fill one split, that split writes out (and lse) itself. Otherwise each
split that holds keys stores its unnormalised accumulator and (m, l) a row to a workspace and counts itself in on
the tile's arrival counter (a split past the sequence's keys writes nothing and ends); the last to arrive merges the
tile's splits, in split order (M = max_s m_s): out = sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s. One kernel:
no second launch and no wait on a grid's end between the splits and their merge (a merge kernel cost ~2 us a call;
journal item 203). It launches as a programmatic dependent on sm_90 (ops/_support.py's pdl_options).

The split count (host-side, from shapes only: a graph replay keeps it) fills one wave of the split kernel's
resident programs (from its compiled registers and shared memory), at least MIN_SPLIT_KEYS keys of capacity
a split; num_splits= overrides it.

append_kv(k_cache, v_cache, k, v, cache_lengths, block_table=None) writes a step's keys and values into a cache of
either layout before it is read: row s of k[b, h] to row cache_lengths[b] + s of sequence b's cache (v alike), then
cache_lengths += S, in one kernel (a program a (sequence, kv head); the last of a length's readers to arrive advances
it). Traffic: the new rows read once and written once (paged: a page id read a row). transformers'
StaticLayer.update does the same in four kernels (an arange, an add, two index_copy_); integrations/hf.py routes a
patched model's static cache there.

Traffic (cache elements of 2 bytes, or 1 for fp8): each program reads its query rows once and each k/v row of its
range once, so a (sequence, kv head)'s first L_b keys and values (with mask_bounds, those from the tile of its first
seen key) are read from memory once in all; out (and lse) written once. With splits, each split also writes and the
merging split reads rows x (D + 2) fp32 partials: at D = 128, 4 rows and 256 keys a split, 2 KB against the split's
128 KB of 16-bit keys and values. The floor
counted by the cost model is q, each sequence's first L_b keys and values read once, out written once;
FLOPs 4 * D per (query, seen key).
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (QUANT_FORMATS, arrival_counters, arrive_last, await_previous, cdiv,
                                  check_fp8_device, check_same_device, fitting_stages, launch, num_sms, pdl_options,
                                  planned, runs_kernel, torch_op)
from rooftop.ops.attention import (FP8_KV, attention_eager, check_qkv, check_scale, check_sinks, check_softcap,
                                   fold_sink, soft_cap)
from rooftop.roofline import Cost

LOG2E = 1.4426950408889634
MAX_BLOCK_M = 64  # query rows a program (GROUP * Sq past this: several row tiles a kv head)
MIN_SPLIT_KEYS = 64  # keys of capacity a split at least (one loop step)
MAX_SPLITS = 128
BLOCK_N = 128  # keys a loop step (D > 128: half as many; D > 256: a quarter)
# heads past attention's 256 (Gemma 4's full layers: 512): a program holds 16 query rows (acc: 64 fp32 a thread)
DECODE_MAX_HEAD_DIM = 512
NUM_WARPS = 4
NUM_STAGES = 3  # k/v tiles in flight (cp.async) on a GPU
# BLOCK_N, NUM_WARPS, NUM_STAGES: the best total over 5 large cases (B = 1 at L = 32K and 128K, B = 8, 32, 128) of
# 18 settings on the H200 (benchmarks/exp_decode_attention.py, journal item 189); the best 4 were within 1%.
MERGE_ELEMENTS = 8192  # partials the merging split loads at once (rows x CHUNK splits x D; journal item 203)
FP8_MAX = tl.constexpr(QUANT_FORMATS["fp8"][2])  # e4m3's largest finite value (448): fp8 caches' codes saturate there


@triton.jit
def _kv_rows(block_table, b, n0, pos, live, stride_kp, stride_ks, stride_vp, stride_vs, PAGE_SIZE: tl.constexpr,
             BLOCK_N: tl.constexpr):
    """Offsets (int64) of sequence b's key and value rows `pos` (n0, n0 + 1, ...): contiguous (PAGE_SIZE 0), or
    through its block table (reads: one page id a tile where whole tiles fit a page, else one a key; the keys and
    values share them)."""
    if PAGE_SIZE == 0:
        b64 = tl.cast(b, tl.int64)
        return b64 * stride_kp + pos.to(tl.int64) * stride_ks, b64 * stride_vp + pos.to(tl.int64) * stride_vs
    if PAGE_SIZE % BLOCK_N == 0:  # n0 is a multiple of BLOCK_N: the tile lies in one page
        page = tl.load(block_table + n0 // PAGE_SIZE).to(tl.int64)
    else:
        page = tl.load(block_table + pos // PAGE_SIZE, mask=live, other=0).to(tl.int64)
    slot = (pos % PAGE_SIZE).to(tl.int64)
    return page * stride_kp + slot * stride_ks, page * stride_vp + slot * stride_vs


@triton.jit
def cache_rows(table_row, b, pos, live, stride_0, stride_row, PAGE_SIZE: tl.constexpr):
    """Offsets (int64) of rows `pos` of sequence b in a cache: [b, :, pos] of a contiguous one (PAGE_SIZE 0), else
    [table_row[pos // PAGE_SIZE], :, pos % PAGE_SIZE] of a paged one (table_row: b's block table; a page id read a
    row). stride_0: the cache's dim-0 stride (sequence or page), stride_row: its dim 2's."""
    if PAGE_SIZE == 0:
        return tl.cast(b, tl.int64) * stride_0 + pos.to(tl.int64) * stride_row
    page = tl.load(table_row + pos // PAGE_SIZE, mask=live, other=0).to(tl.int64)
    return page * stride_0 + (pos % PAGE_SIZE).to(tl.int64) * stride_row


@triton.jit
def _sequence_keys(seqlens, b, capacity):
    """Sequence b's keys: its cache_seqlens entry clamped to [0, capacity] (a wrong length never reads outside)."""
    return tl.maximum(tl.minimum(tl.load(seqlens + b), capacity), 0)


@triton.jit
def _split_keys(seqlen, num_splits, BLOCK_N: tl.constexpr):
    """Keys a split of a sequence of `seqlen` keys (whole BLOCK_N tiles): its splits past the keys have none."""
    return tl.cdiv(tl.cdiv(seqlen, num_splits), BLOCK_N) * BLOCK_N


@triton.jit
def _store_out(o, lse, sinks, head, acc, l_i, m_i, row_off, lse_off, row_ok, offs_d, HEAD_DIM: tl.constexpr,
               RETURN_LSE: tl.constexpr, SINKS: tl.constexpr):
    """out = acc / l (0 where no key was seen) and lse = (m + log2 l) ln 2 (-inf there); with SINKS the row's head's
    sink logit (reads: one a row) first joins l (m, l in log2 units, as the scores)."""
    if SINKS:
        sink = tl.load(sinks + head, mask=row_ok, other=0.0).to(tl.float32) * 1.4426950408889634  # x log2(e)
        acc, l_i, m_i = fold_sink(acc, l_i, m_i, sink)
    seen = l_i > 0
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    tl.store(o + row_off[:, None] + offs_d[None, :], out.to(o.dtype.element_ty),
             mask=row_ok[:, None] & (offs_d[None, :] < HEAD_DIM))
    if RETURN_LSE:
        log2_sum = m_i + tl.math.log2(tl.where(seen, l_i, 1.0))
        tl.store(lse + lse_off, tl.where(seen, log2_sum * 0.6931471805599453, -float("inf")), mask=row_ok)  # x ln 2


@triton.jit
def _attend_range(qt, k_head, v_head, table, mask_row, read_mask, b, start, end, first, last_key, qk_scale, softcap,
                  stride_kp, stride_ks, stride_vp, stride_vs, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr, MASKED: tl.constexpr,
                  FROM_FIRST: tl.constexpr, SOFTCAP: tl.constexpr, KV_FP8: tl.constexpr, CODES: tl.constexpr,
                  PRECISION: tl.constexpr):
    """The online softmax of a program's query rows qt over keys start .. end - 1 of sequence b: (m, l, acc) a row in
    fp32, acc unnormalised. A row sees a key up to its last_key, with FROM_FIRST from key `first` on, and with MASKED
    where read_mask (a flag the whole program shares) and the key's byte in mask_row (the sequence's row) is set."""
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d[None, :] < HEAD_DIM
    for n0 in tl.range(start, end, BLOCK_N):
        pos = n0 + offs_n
        live = pos < end
        k_rows, v_rows = _kv_rows(table, b, n0, pos, live, stride_kp, stride_ks, stride_vp, stride_vs, PAGE_SIZE,
                                  BLOCK_N)
        # reads: BLOCK_N key rows and BLOCK_N value rows of the range, once
        kt = tl.load(k_head + k_rows[:, None] + offs_d[None, :], mask=live[:, None] & d_ok, other=0.0)
        if KV_FP8:
            kt = kt.to(CODES)
        s = tl.dot(qt, kt.T, input_precision=PRECISION) * qk_scale
        if SOFTCAP:  # softcap in the scaled scores' log2 units
            s = soft_cap(s, softcap)
        seen = pos[None, :] <= last_key[:, None]  # past a row's last key, or the range: not seen
        if FROM_FIRST:
            seen &= pos[None, :] >= first
        if MASKED:
            if read_mask:  # reads: BLOCK_N mask bytes (a branch, not a second loop: that would double the pipeline's
                # shared memory, halving the programs an SM holds; journal item 571)
                seen &= tl.load(mask_row + pos, mask=live, other=0)[None, :] != 0
        s = tl.where(seen, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # no key seen yet: exp2(-inf) = 0, not NaN
        p = tl.math.exp2(s - m_ref[:, None])
        alpha = tl.math.exp2(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(v_head + v_rows[:, None] + offs_d[None, :], mask=live[:, None] & d_ok, other=0.0)
        if KV_FP8:
            vt = vt.to(CODES)
        acc = tl.dot(p.to(vt.dtype), vt, acc * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
    return m_i, l_i, acc


@triton.jit
def _decode_attention_kernel(q, k, v, o, lse, part_acc, part_ml, counters, seqlens, block_table, key_mask,
                             key_bounds, sinks, qk_scale, softcap, v_scale,
                             stride_qb, stride_qh, stride_qs, stride_kp, stride_kh, stride_ks,
                             stride_vp, stride_vh, stride_vs, stride_ob, stride_oh, stride_os, stride_tb, stride_mb,
                             stride_nb, Hkv, Sq, rows, row_tiles, capacity, num_splits,
                             GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr,
                             HAS_MASK: tl.constexpr, HAS_BOUNDS: tl.constexpr, SPLIT: tl.constexpr,
                             MERGE_ROWS: tl.constexpr, MERGE_CHUNK: tl.constexpr, RETURN_LSE: tl.constexpr,
                             PRECISION: tl.constexpr, SINKS: tl.constexpr, SOFTCAP: tl.constexpr, PDL: tl.constexpr):
    # fp8 caches: codes widened exactly to CODES (fp16 beside a 16-bit q: one cvt a pair of codes, where bf16 takes
    # several; journal item 561) before the dots; k's scale is in qk_scale, v's applied once a row. A bf16 q goes to
    # fp16 once a program, times 2^-e that puts its largest finite magnitude in (2^14, 2^15] (2^e joins qk_scale):
    # bf16's 8 mantissa bits fit fp16's 11, so every element within 2^-28 of that largest keeps its value exactly;
    # inf and NaN stay in their own rows, as in bf16
    KV_FP8: tl.constexpr = k.dtype.element_ty == tl.float8e4nv
    CODES: tl.constexpr = tl.float32 if q.dtype.element_ty == tl.float32 else tl.float16
    await_previous(PDL)
    tile = tl.program_id(0)  # (sequence, kv head, row tile)
    split = tl.program_id(1)
    b = tile // (Hkv * row_tiles)
    kv_head = (tile // row_tiles) % Hkv
    local = tl.arange(0, BLOCK_M)
    r = (tile % row_tiles) * BLOCK_M + local  # query row: (head in group, new token)
    row_ok = r < rows
    head = kv_head * GROUP + r // Sq
    token = r % Sq
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d[None, :] < HEAD_DIM
    seqlen = _sequence_keys(seqlens, b, capacity)
    b64 = tl.cast(b, tl.int64)
    first = 0  # the first key a row may see; the splits cut the whole tiles from the one that holds it
    if HAS_BOUNDS:
        first = tl.maximum(tl.load(key_bounds + b64 * stride_nb), 0)
    first_tile = tl.minimum(first // BLOCK_N * BLOCK_N, seqlen)
    per_split = _split_keys(seqlen - first_tile, num_splits, BLOCK_N)
    start = first_tile + split * per_split
    if SPLIT and split > 0 and start >= seqlen:  # a split past the sequence's keys: the merge reads only those before
        return
    end = tl.minimum(start + per_split, seqlen)
    last_key = seqlen - Sq + token  # the last key each row sees
    # reads: the tile's query rows, once
    q_rows = b64 * stride_qb + head.to(tl.int64) * stride_qh + token.to(tl.int64) * stride_qs
    qt = tl.load(q + q_rows[:, None] + offs_d[None, :], mask=row_ok[:, None] & d_ok, other=0.0)
    if KV_FP8 and q.dtype.element_ty == tl.bfloat16:
        magnitude = tl.abs(qt.to(tl.float32))
        q_max = tl.max(tl.max(tl.where(magnitude < float("inf"), magnitude, 0.0), 1), 0)  # finite ones (not NaN)
        shift = tl.where(q_max > 0, tl.ceil(tl.log2(q_max)) - 15.0, 0.0)
        qt = (qt.to(tl.float32) * tl.exp2(-shift)).to(tl.float16)
        qk_scale = qk_scale * tl.exp2(shift)

    table = block_table + b64 * stride_tb
    k_head = k + tl.cast(kv_head, tl.int64) * stride_kh
    v_head = v + tl.cast(kv_head, tl.int64) * stride_vh
    mask_row = key_mask + b64 * stride_mb
    read_mask = HAS_MASK
    if HAS_MASK and HAS_BOUNDS:  # a mask that is exactly the range [first, seqlen): the range alone, no mask byte read
        read_mask = tl.load(key_bounds + b64 * stride_nb + 1) == 0
    m_i, l_i, acc = _attend_range(qt, k_head, v_head, table, mask_row, read_mask, b, start, end, first, last_key,
                                  qk_scale, softcap, stride_kp, stride_ks, stride_vp, stride_vs, BLOCK_M, BLOCK_N,
                                  BLOCK_D, HEAD_DIM, PAGE_SIZE, HAS_MASK, HAS_BOUNDS, SOFTCAP, KV_FP8, CODES, PRECISION)
    if KV_FP8:
        acc *= v_scale  # out = sum_j p_j v_scale code_j

    lse_rows = (b64 * (Hkv * GROUP) + head) * Sq + token  # the row's index in [B, Hq, Sq]
    active = 1  # splits that hold keys (without splits: the one)
    if SPLIT:
        active = tl.cdiv(seqlen - first_tile, tl.maximum(per_split, 1))  # (split 0 runs even with none)
    if active > 1:
        # writes: this split's partials, D + 2 fp32 a row (the last split to arrive reads them once)
        part = lse_rows * num_splits + split
        tl.store(part_acc + part[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=row_ok[:, None] & d_ok)
        tl.store(part_ml + part * 2, m_i, mask=row_ok)
        tl.store(part_ml + part * 2 + 1, l_i, mask=row_ok)
        if arrive_last(counters, tile, active):
            _merge_splits(part_acc, part_ml, o, lse, sinks, active, num_splits, b64, kv_head, Hkv, Sq, rows,
                          (tile % row_tiles) * BLOCK_M, stride_ob, stride_oh, stride_os, GROUP, MERGE_ROWS,
                          MERGE_CHUNK, BLOCK_D, HEAD_DIM, RETURN_LSE, SINKS)
    else:
        out_rows = b64 * stride_ob + head.to(tl.int64) * stride_oh + token.to(tl.int64) * stride_os
        _store_out(o, lse, sinks, head, acc, l_i, m_i, out_rows, lse_rows, row_ok, offs_d, HEAD_DIM, RETURN_LSE,
                   SINKS)


@triton.jit
def _merge_splits(part_acc, part_ml, o, lse, sinks, active, num_splits, b64, kv_head, Hkv, Sq, rows, first_row,
                  stride_ob, stride_oh, stride_os, GROUP: tl.constexpr, MERGE_ROWS: tl.constexpr, CHUNK: tl.constexpr,
                  BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr, RETURN_LSE: tl.constexpr, SINKS: tl.constexpr):
    """Out (and lse) of a tile's query rows (MERGE_ROWS >= its real ones, not BLOCK_M's padding) from their `active`
    splits' partials, in split order whichever split merges: m = max_s m_s, l = sum_s 2^(m_s - m) l_s, out = sum_s
    2^(m_s - m) acc_s / l. Reads the partials once, CHUNK splits a load (independent loads in flight, not an L2
    round trip a split); .cg: other SMs wrote them, skip this SM's L1."""
    r = first_row + tl.arange(0, MERGE_ROWS)
    row_ok = r < rows
    head = kv_head * GROUP + r // Sq
    token = r % Sq
    lse_rows = (b64 * (Hkv * GROUP) + head) * Sq + token
    offs_d = tl.arange(0, BLOCK_D)
    c = tl.arange(0, CHUNK)
    m_i = tl.full((MERGE_ROWS,), -float("inf"), tl.float32)
    l_i = tl.zeros((MERGE_ROWS,), tl.float32)
    acc = tl.zeros((MERGE_ROWS, BLOCK_D), tl.float32)
    for c0 in range(0, active, CHUNK):
        parts = lse_rows[:, None] * num_splits + c0 + c[None, :]  # [MERGE_ROWS, CHUNK]
        live = row_ok[:, None] & (c0 + c[None, :] < active)
        m_c = tl.load(part_ml + parts * 2, mask=live, other=-float("inf"), cache_modifier=".cg")
        l_c = tl.load(part_ml + parts * 2 + 1, mask=live, other=0.0, cache_modifier=".cg")
        a_c = tl.load(part_acc + parts[:, :, None] * HEAD_DIM + offs_d[None, None, :],
                      mask=live[:, :, None] & (offs_d[None, None, :] < HEAD_DIM), other=0.0, cache_modifier=".cg")
        m_new = tl.maximum(m_i, tl.max(m_c, 1))
        m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # no split saw a key yet: weights 0, not NaN
        alpha = tl.math.exp2(m_i - m_ref)
        w = tl.math.exp2(m_c - m_ref[:, None])
        l_i = l_i * alpha + tl.sum(w * l_c, 1)
        acc = acc * alpha[:, None] + tl.sum(w[:, :, None] * a_c, 1)
        m_i = m_new
    out_rows = b64 * stride_ob + head.to(tl.int64) * stride_oh + token.to(tl.int64) * stride_os
    _store_out(o, lse, sinks, head, acc, l_i, m_i, out_rows, lse_rows, row_ok, offs_d, HEAD_DIM, RETURN_LSE, SINKS)


# ---------------------------------------------------------------------------------------------
# Wrapper


def _block_m(query_rows: int, D: int) -> int:
    return min(MAX_BLOCK_M if D <= 256 else 16, max(16, triton.next_power_of_2(query_rows)))


def _block_n(D: int) -> int:
    return BLOCK_N if D <= 128 else BLOCK_N // 2 if D <= 256 else BLOCK_N // 4


def default_splits(tiles: int, capacity: int, resident: int, device: torch.device) -> int:
    """Key splits a (sequence, kv head, row tile): as many as fill one wave of `resident` programs an SM over the
    `tiles` (a second, partial wave only trails: journal item 188), each split at least MIN_SPLIT_KEYS keys of the
    cache's `capacity`."""
    sms = num_sms(device.index) if device.type == "cuda" else 4
    return max(1, min(resident * sms // max(tiles, 1), cdiv(capacity, MIN_SPLIT_KEYS), MAX_SPLITS))


def cache_capacity(k_cache: torch.Tensor, block_table: Optional[torch.Tensor]) -> int:
    """Rows a sequence's cache holds: S_max, or pages_per_seq * page_size."""
    return k_cache.shape[2] * (1 if block_table is None else block_table.shape[1])


def _decode_fake(q, k_cache, v_cache, cache_seqlens, block_table, key_mask, mask_bounds, scale, num_splits,
                 return_lse, sinks, softcap, k_scale, v_scale):
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            q.new_empty(q.shape[:3] if return_lse else (0,), dtype=torch.float32))


@torch_op("decode_attention", fake=_decode_fake)
def _decode_attention_op(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
                         block_table: Optional[torch.Tensor], key_mask: Optional[torch.Tensor],
                         mask_bounds: Optional[torch.Tensor], scale: float, num_splits: int, return_lse: bool,
                         sinks: Optional[torch.Tensor], softcap: float, k_scale: float,
                         v_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    B, Hq, Sq, D = q.shape
    Hkv = k_cache.shape[1]
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[:3] if return_lse else (0,), dtype=torch.float32, device=q.device)
    if not runs_kernel(q):
        ref, ref_lse = decode_attention_reference(q, k_cache, v_cache, cache_seqlens, block_table, key_mask, scale,
                                                  return_lse=True, sinks=sinks, softcap=softcap or None,
                                                  k_scale=k_scale, v_scale=v_scale)
        out.copy_(ref)
        if return_lse:
            lse.copy_(ref_lse)
        return out, lse
    if out.numel() == 0:
        return out, lse
    group = Hq // Hkv
    rows = group * Sq
    block_m = _block_m(rows, D)
    row_tiles = cdiv(rows, block_m)
    tiles = B * Hkv * row_tiles
    table = block_table if block_table is not None else cache_seqlens  # unused when contiguous
    mask = key_mask.view(torch.uint8) if key_mask is not None else cache_seqlens  # unused without a mask
    bounds = mask_bounds if mask_bounds is not None else cache_seqlens  # unused without them
    block_d = max(16, triton.next_power_of_2(D))
    lse_arg = lse if return_lse else out  # unused without lse
    capacity = cache_capacity(k_cache, block_table)

    merge_rows = min(block_m, triton.next_power_of_2(rows))  # a tile's real rows at most

    def kernel_args(part_acc, part_ml, counters, splits, stages=NUM_STAGES):
        return ((q, k_cache, v_cache, out, lse_arg, part_acc, part_ml, counters, cache_seqlens, table, mask, bounds,
                 cache_seqlens if sinks is None else sinks, scale * LOG2E * k_scale, softcap * LOG2E, v_scale,
                 q.stride(0), q.stride(1), q.stride(2), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
                 v_cache.stride(0), v_cache.stride(1), v_cache.stride(2), out.stride(0), out.stride(1),
                 out.stride(2), 0 if block_table is None else block_table.stride(0),
                 0 if key_mask is None else key_mask.stride(0), 0 if mask_bounds is None else mask_bounds.stride(0),
                 Hkv, Sq, rows, row_tiles, capacity, splits),
                dict(GROUP=group, BLOCK_M=block_m, BLOCK_N=_block_n(D), BLOCK_D=block_d, HEAD_DIM=D,
                     PAGE_SIZE=0 if block_table is None else k_cache.shape[2], HAS_MASK=key_mask is not None,
                     HAS_BOUNDS=mask_bounds is not None, SPLIT=splits > 1, MERGE_ROWS=merge_rows,
                     MERGE_CHUNK=max(1, MERGE_ELEMENTS // (merge_rows * block_d)), RETURN_LSE=return_lse,
                     SINKS=sinks is not None, SOFTCAP=softcap > 0,
                     PRECISION="ieee" if q.dtype == torch.float32 else "tf32", num_warps=NUM_WARPS,
                     num_stages=stages if q.is_cuda else 1, **pdl_options(q)))

    # the split kernel compiled (placeholder workspace) with the stages the card's shared memory takes (99 KB cards:
    # 2 at D = 128 in 16 bits), then, without a given split, the programs an SM from its compiled resources
    placeholder = torch.empty(0, dtype=torch.float32, device=q.device)
    args, constexprs = kernel_args(placeholder, placeholder, placeholder, 2)
    stages, compiled = fitting_stages(_decode_attention_kernel, *args, **constexprs)
    if num_splits == 0:
        num_splits = default_splits(tiles, capacity, compiled.resident_per_sm if compiled else 2, q.device)
    if num_splits > 1:  # workspace: D + 2 fp32 a (query row, split); a tile's arrivals counted
        part_acc = torch.empty((B * Hq * Sq, num_splits, D), dtype=torch.float32, device=q.device)
        part_ml = torch.empty((B * Hq * Sq, num_splits, 2), dtype=torch.float32, device=q.device)
        counters = arrival_counters(q.device, tiles)
    else:
        part_acc = part_ml = counters = out  # unused
    args, constexprs = kernel_args(part_acc, part_ml, counters, num_splits, stages)
    launch(_decode_attention_kernel, (tiles, num_splits), *args, **constexprs)
    return out, lse


def check_index_tensor(name: str, t, B: int, ref_name: str, ref: torch.Tensor, shape: Optional[tuple] = None) -> None:
    """`t` (named `name`): an int32 tensor of `shape` (default [B, anything]: a block table) on ref's device, its
    last dim of unit stride."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int32:
        raise TypeError(f"{name} must be an int32 tensor, got "
                        f"{t.dtype if isinstance(t, torch.Tensor) else type(t).__name__}")
    check_same_device(name, t, ref_name, ref)
    if t.dim() and t.stride(-1) != 1 and t.shape[-1] > 1:
        raise ValueError(f"{name} must have unit stride along its last dim")
    if shape is None:
        shape = (B, t.shape[-1]) if t.dim() == 2 else None
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape or '[batch, pages_per_seq]'} (batch {B}), "
                         f"got {tuple(t.shape)}")


def check_fp8_scale(name: str, value) -> float:
    """A per-tensor scale of an FP8_KV cache: a positive finite float (None: 1.0)."""
    value = 1.0 if value is None else value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive finite float (a per-tensor scale of fp8 codes), got {value!r}")
    return float(value)


def check_kv_scales(k_cache: torch.Tensor, k_scale, v_scale) -> tuple[float, float]:
    """(k_scale, v_scale) of caches of k_cache's dtype: an FP8_KV cache (on a GPU that runs fp8 kernels) holds codes
    of k / k_scale and v / v_scale (positive finite floats, one for each cache tensor; default 1.0); a 16-bit or fp32
    cache takes none. Floats, not tensors: a tensor's value would cost a host sync a call and be frozen into a CUDA
    graph anyway."""
    if k_cache.dtype != FP8_KV:
        for name, value in (("k_scale", k_scale), ("v_scale", v_scale)):
            if value is not None:
                raise TypeError(f"{name} is for {FP8_KV} caches; k_cache is {k_cache.dtype}")
        return 1.0, 1.0
    check_fp8_device("k_cache", k_cache.device)
    return check_fp8_scale("k_scale", k_scale), check_fp8_scale("v_scale", v_scale)


def quantize_kv(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """x (keys or values, any float dtype) as an FP8_KV cache holds it: x / scale (as x times 1 / scale in fp32),
    saturated at +-FP8_MAX, rounded to the nearest code; dequantized, code * scale. append_kv writes the same codes."""
    return (x.float() * (1.0 / check_fp8_scale("scale", scale))).clamp(-FP8_MAX.value, FP8_MAX.value).to(FP8_KV)


def _check_decode(q, k_cache, v_cache, cache_seqlens, block_table, key_mask, sinks=None, bounds=None) -> None:
    check_qkv(q, k_cache, v_cache, 4, "[batch, heads, tokens, head_dim] (a paged cache: [pages, kv heads, page_size, "
              "head_dim])", names=("q", "k_cache", "v_cache"), fp8_kv=True,
              max_head_dim=DECODE_MAX_HEAD_DIM)
    B = q.shape[0]
    check_index_tensor("cache_seqlens", cache_seqlens, B, "q", q, (B,))
    if block_table is not None:
        check_index_tensor("block_table", block_table, B, "q", q)
    if block_table is None and k_cache.shape[0] < B:
        raise ValueError(f"k_cache holds {k_cache.shape[0]} sequences but q has batch {B}")
    if block_table is not None and k_cache.shape[2] == 0:
        raise ValueError("k_cache's page_size (dim 2) must be positive")
    if key_mask is not None:
        capacity = cache_capacity(k_cache, block_table)
        if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool:
            raise TypeError("key_mask must be a bool tensor [batch, capacity]")
        check_same_device("key_mask", key_mask, "q", q)
        if key_mask.dim() != 2 or key_mask.shape[0] != B or key_mask.shape[1] < capacity:
            raise ValueError(f"key_mask must have shape ({B}, >= {capacity}) (batch, the cache's capacity), "
                             f"got {tuple(key_mask.shape)}")
        if key_mask.stride(1) != 1 and capacity > 1:
            raise ValueError("key_mask must have unit stride along its last dim")
    if bounds is not None:
        if key_mask is None:
            raise ValueError("mask_bounds describes a key_mask: pass the key_mask it was computed from")
        check_index_tensor("mask_bounds", bounds, B, "q", q, (B, 2))
    check_sinks(sinks, q, q.shape[1])


@planned
def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
                     block_table: Optional[torch.Tensor] = None, scale: Optional[float] = None,
                     num_splits: Optional[int] = None, return_lse: bool = False,
                     key_mask: Optional[torch.Tensor] = None, sinks: Optional[torch.Tensor] = None,
                     softcap: Optional[float] = None, k_scale: Optional[float] = None,
                     v_scale: Optional[float] = None, mask_bounds: Optional[torch.Tensor] = None):
    """Attention of q [B, Hq, Sq, D] (each sequence's Sq newest tokens, already in the cache) over the first
    cache_seqlens[b] (int32 [B]) keys of sequence b's cache: k_cache, v_cache [B_cache, Hkv, S_max, D], or
    paged [pages, Hkv, page_size, D] with block_table int32 [B, pages_per_seq]; query i sees the keys up to
    cache_seqlens[b] - Sq + i. GQA/MQA when Hq is a multiple of Hkv; scale defaults to 1/sqrt(D); num_splits
    (keys split over that many programs a sequence and kv head) defaults to a choice from the shapes. key_mask (bool
    [B, >= capacity], a row's stride may be 0): key j of sequence b is seen only where key_mask[b, j] too (padding,
    windows: the mask a model passes); mask_bounds (int32 [B, 2]: key_mask_bounds(key_mask, cache_seqlens), computed
    once for the layers of a step that share the mask) lets the kernel skip the key tiles before a sequence's first
    seen one and read no mask byte of a sequence whose mask is exactly one range of keys (bounds are trusted, not
    checked against the mask: others drop its holes or keys, which the CPU reference would keep). sinks (float [Hq],
    gpt-oss's): a logit each query head's softmax takes in with no value (module docstring); softcap (Gemma 2's):
    scores s become softcap tanh(s / softcap).
    fp8 caches (torch.float8_e4m3fn): key j is k_cache's code times k_scale, value j v_cache's code
    times v_scale (per-tensor floats, default 1.0; append_kv and quantize_kv write such codes): half the bytes of a
    16-bit cache. Returns out [B, Hq, Sq, D], and with return_lse also lse [B, Hq, Sq] fp32 (natural log; with sinks,
    the sink's term in it)."""
    _check_decode(q, k_cache, v_cache, cache_seqlens, block_table, key_mask, sinks, mask_bounds)
    k_scale, v_scale = check_kv_scales(k_cache, k_scale, v_scale)
    if num_splits is None:
        num_splits = 0  # the op chooses
    elif isinstance(num_splits, bool) or not isinstance(num_splits, int) or not 1 <= num_splits <= 65535:
        raise ValueError(f"num_splits must be an int in [1, 65535], got {num_splits!r}")
    out, lse = _decode_attention_op(q, k_cache, v_cache, cache_seqlens, block_table, key_mask, mask_bounds,
                                    check_scale(scale, q.shape[-1]), num_splits, bool(return_lse),
                                    None if sinks is None else sinks.contiguous(), check_softcap(softcap), k_scale,
                                    v_scale)
    return (out, lse) if return_lse else out


def key_mask_bounds(key_mask: torch.Tensor, cache_seqlens: torch.Tensor) -> torch.Tensor:
    """int32 [B, 2] for decode_attention's mask_bounds: with L_b = cache_seqlens[b] clamped to [0, key_mask's width],
    a sequence's first key j < L_b with key_mask[b, j] (L_b where none), and 1 where the mask over its keys is exactly
    the range from there to L_b (left padding, a window, every key: no mask byte need be read), else 0. On the device,
    no host sync: a handful of small kernels, once for the layers of a step that share the mask."""
    if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool:
        raise TypeError("key_mask must be a bool tensor [batch, capacity]")
    if key_mask.dim() != 2:
        raise ValueError(f"key_mask must have 2 dims [batch, capacity], got shape {tuple(key_mask.shape)}")
    batch, width = key_mask.shape
    check_index_tensor("cache_seqlens", cache_seqlens, batch, "key_mask", key_mask, (batch,))
    if width == 0:  # no key: each sequence's range is empty, and exactly its mask
        bounds = key_mask.new_zeros((batch, 2), dtype=torch.int32)
        bounds[:, 1] = 1
        return bounds
    keys = torch.arange(width, dtype=torch.int32, device=key_mask.device)
    lengths = cache_seqlens.clamp(0, width)[:, None]
    seen = key_mask & (keys < lengths)
    first = torch.where(seen, keys, width).amin(-1, keepdim=True).minimum(lengths)
    exact = seen.sum(-1, keepdim=True, dtype=torch.int32) == lengths - first
    return torch.cat([first, exact.to(torch.int32)], -1)


# ---------------------------------------------------------------------------------------------
# Appending a step's keys and values to a contiguous cache


@triton.jit
def cache_values(x, inverse_scale, cache):
    """x as `cache` holds it: an fp8 cache's codes of x / scale (x times 1 / scale in fp32, saturated at +-FP8_MAX,
    to the nearest code: quantize_kv), else x."""
    FP8: tl.constexpr = cache.dtype.element_ty == tl.float8e4nv  # (a constexpr: one branch compiled)
    if FP8:
        x = tl.clamp(x.to(tl.float32) * inverse_scale, -FP8_MAX, FP8_MAX).to(tl.float8e4nv)
    return x


@triton.jit
def _append_kv_kernel(k, v, k_cache, v_cache, lengths, counters, block_table, S, H, capacity, k_inverse, v_inverse,
                      stride_kb, stride_kh, stride_ks, stride_vb, stride_vh, stride_vs, stride_ck0, stride_ckh,
                      stride_cks, stride_cv0, stride_cvh, stride_cvs, stride_table, PER_SEQUENCE: tl.constexpr,
                      PAGE_SIZE: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, HEAD_DIM: tl.constexpr,
                      PDL: tl.constexpr):
    # Program (b, h): k[b, h] and v[b, h] (S rows of D) to rows lengths[b] + s of the caches (`cache_rows`: contiguous,
    # or paged through b's block table; rows past the capacity dropped; fp8 caches: codes of k / k_scale, v / v_scale,
    # k_inverse = 1 / k_scale): reads and writes 2 S D elements. The last program of the length's readers to arrive
    # adds S to it.
    b = tl.program_id(0) // H
    h = tl.program_id(0) % H
    await_previous(PDL)
    start = tl.load(lengths + b * PER_SEQUENCE)
    offs_d = tl.arange(0, BLOCK_D)
    b64 = b.to(tl.int64)
    table_row = block_table + b64 * stride_table
    for s0 in range(0, S, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        pos = start + s
        in_cache = (s < S) & (pos >= 0) & (pos < capacity)
        live = (s < S)[:, None] & (offs_d < HEAD_DIM)[None, :]
        kept = live & in_cache[:, None]
        rows = k + b64 * stride_kb + h * stride_kh + s[:, None] * stride_ks + offs_d[None, :]
        k_rows = cache_rows(table_row, b, pos, in_cache, stride_ck0, stride_cks, PAGE_SIZE)
        tl.store(k_cache + h * stride_ckh + k_rows[:, None] + offs_d[None, :],
                 cache_values(tl.load(rows, mask=live), k_inverse, k_cache), mask=kept)
        rows = v + b64 * stride_vb + h * stride_vh + s[:, None] * stride_vs + offs_d[None, :]
        v_rows = cache_rows(table_row, b, pos, in_cache, stride_cv0, stride_cvs, PAGE_SIZE)
        tl.store(v_cache + h * stride_cvh + v_rows[:, None] + offs_d[None, :],
                 cache_values(tl.load(rows, mask=live), v_inverse, v_cache), mask=kept)
    advance_length(lengths, counters, b, start, S, H, PER_SEQUENCE)


@triton.jit
def advance_length(lengths, counters, b, start, S, readers, PER_SEQUENCE: tl.constexpr):
    """lengths[b] (PER_SEQUENCE; else the one length) <- start + S by the last of its readers to arrive: `readers`
    programs a sequence, else every program of the launch (append_kv, apply_rope_append_kv)."""
    if PER_SEQUENCE:
        last = arrive_last(counters, b, readers)
    else:
        last = arrive_last(counters, 0, tl.num_programs(0))
    if last:
        tl.store(lengths + b * PER_SEQUENCE, start + S)


def _append_kv_fake(k_cache, v_cache, k, v, cache_lengths, block_table, k_scale, v_scale) -> None:
    return None


@torch_op("append_kv", mutates_args=("k_cache", "v_cache", "cache_lengths"), fake=_append_kv_fake)
def _append_kv_op(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  cache_lengths: torch.Tensor, block_table: Optional[torch.Tensor], k_scale: float,
                  v_scale: float) -> None:
    B, H, S, D = k.shape
    if not runs_kernel(k):
        append_kv_reference(k_cache, v_cache, k, v, cache_lengths, block_table, k_scale, v_scale)
        return
    if k.numel() == 0:
        return
    per_sequence = cache_lengths.numel() > 1  # one a sequence ([B], B > 1), else one for all
    counters = arrival_counters(k.device, B if per_sequence else 1)
    block_d = triton.next_power_of_2(D)
    launch(_append_kv_kernel, (B * H,), k, v, k_cache, v_cache, cache_lengths, counters,
           cache_lengths if block_table is None else block_table, S, H, cache_capacity(k_cache, block_table),
           1.0 / k_scale, 1.0 / v_scale, k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
           k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), v_cache.stride(0), v_cache.stride(1),
           v_cache.stride(2),
           0 if block_table is None else block_table.stride(0), PER_SEQUENCE=per_sequence,
           PAGE_SIZE=0 if block_table is None else k_cache.shape[2],
           BLOCK_S=max(1, min(triton.next_power_of_2(S), 4096 // block_d)), BLOCK_D=block_d, HEAD_DIM=D,
           num_warps=1 if S * D <= 1024 else 4, **pdl_options(k))


@planned
def append_kv(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              cache_lengths: torch.Tensor, block_table: Optional[torch.Tensor] = None, k_scale: Optional[float] = None,
              v_scale: Optional[float] = None) -> None:
    """Append a step's keys and values to a cache, in place: k, v [B, Hkv, S, D] go to rows cache_lengths[b] ..
    cache_lengths[b] + S - 1 of sequence b, then cache_lengths += S. The cache as decode_attention reads it: contiguous,
    k_cache, v_cache [B_cache >= B, Hkv, S_max, D] (Hugging Face's StaticCache layout), or paged, [pages, Hkv,
    page_size, D] with block_table int32 [B, pages_per_seq] (row j of sequence b in page block_table[b, j //
    page_size], slot j % page_size; vLLM's reshape_and_cache for this layout). cache_lengths (int32 or int64, on the
    device) is one length for every sequence (shape [] or [1]: transformers' StaticLayer.cumulative_length) or one a
    sequence ([B]). One kernel (Hugging Face's StaticLayer.update: an arange, an add and two index_copy_ kernels); rows
    past the capacity (S_max, or pages_per_seq * page_size) are not written (as decode_attention clamps lengths, a
    length is not checked, nor are block_table's entries: that would cost a host sync a call). fp8 caches
    (torch.float8_e4m3fn): the codes of k / k_scale and v / v_scale (quantize_kv's: saturated,
    to nearest; per-tensor floats, default 1.0), as decode_attention reads them with the same scales."""
    check_append(k_cache, v_cache, k, v, cache_lengths, block_table, fp8_kv=True)
    _append_kv_op(k_cache, v_cache, k, v, cache_lengths, block_table, *check_kv_scales(k_cache, k_scale, v_scale))


def check_append(k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 cache_lengths: torch.Tensor, block_table: Optional[torch.Tensor] = None, fp8_kv: bool = False) -> None:
    """append_kv's checks of its arguments (also apply_rope_append_kv's; fp8_kv: FP8_KV caches taken)."""
    for name, t in (("k", k), ("v", v)):
        check_qkv(t, k_cache, v_cache, 4, "[batch, kv heads, tokens, head_dim]", names=(name, "k_cache", "v_cache"),
                  fp8_kv=fp8_kv, max_head_dim=DECODE_MAX_HEAD_DIM)
    B, H, S, D = k.shape
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"v must have k's shape {tuple(k.shape)}, got {tuple(v.shape)}")
    if block_table is not None:
        check_index_tensor("block_table", block_table, B, "k", k)
        if k_cache.shape[2] == 0:
            raise ValueError("k_cache's page_size (dim 2) must be positive")
    if (block_table is None and k_cache.shape[0] < B) or k_cache.shape[1] != H or k_cache.shape[3] != D:
        raise ValueError(f"k_cache {tuple(k_cache.shape)} cannot hold k {tuple(k.shape)}: it must be "
                         f"[{'pages' if block_table is not None else f'>= {B}'}, {H}, "
                         f"{'page_size' if block_table is not None else 'S_max'}, {D}]")
    if not isinstance(cache_lengths, torch.Tensor) or cache_lengths.dtype not in (torch.int32, torch.int64):
        raise TypeError("cache_lengths must be an int32 or int64 tensor")
    check_same_device("cache_lengths", cache_lengths, "k", k)
    if tuple(cache_lengths.shape) not in ((), (1,), (B,)):
        raise ValueError(f"cache_lengths must have shape (), (1,) or ({B},) (batch), got {tuple(cache_lengths.shape)}")
    if cache_lengths.dim() and cache_lengths.stride(0) != 1 and cache_lengths.shape[0] > 1:
        raise ValueError("cache_lengths must have unit stride (the kernels index and advance it as contiguous)")


def append_kv_reference(k_cache, v_cache, k, v, cache_lengths, block_table=None, k_scale=1.0, v_scale=1.0) -> None:
    """append_kv's maths in torch (a row at a time), in place."""
    if k_cache.dtype == FP8_KV:
        k, v = quantize_kv(k, k_scale), quantize_kv(v, v_scale)
    S = k.shape[2]
    starts = cache_lengths.reshape(-1).expand(k.shape[0]).tolist()
    page_size = k_cache.shape[2]
    for b in range(k.shape[0]):
        for s in range(S):
            pos = starts[b] + s
            if not 0 <= pos < cache_capacity(k_cache, block_table):
                continue
            where = (b, pos) if block_table is None else (int(block_table[b, pos // page_size]), pos % page_size)
            k_cache[where[0], :, where[1]] = k[b, :, s]
            v_cache[where[0], :, where[1]] = v[b, :, s]
    cache_lengths.add_(S)


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def gather_cache(cache: torch.Tensor, block_table: Optional[torch.Tensor], batch: int, length: int) -> torch.Tensor:
    """[batch, Hkv, length, D]: the first `length` keys (or values) of the first `batch` sequences' caches."""
    if block_table is None:
        return cache[:batch, :, :length]
    pages = cache[block_table[:batch, :cdiv(length, cache.shape[2])].long()]  # [batch, n, Hkv, page_size, D]
    return pages.transpose(1, 2).reshape(batch, cache.shape[1], -1, cache.shape[3])[:, :, :length]


def decode_attention_reference(q, k_cache, v_cache, cache_seqlens, block_table=None, key_mask=None, scale=None,
                               return_lse=False, sinks=None, softcap=None, k_scale=1.0, v_scale=1.0):
    """Per sequence in float64, the scores materialised: query i sees key j < L_b (cache_seqlens[b] clamped to the
    cache's capacity) with j <= L_b - Sq + i, and key_mask[b, j] where a mask is given; no key: out 0, lse -inf;
    sinks [Hq]: each head's logit in the softmax's sum (gpt-oss's eager form: a column of it, dropped after);
    softcap: scores softcap tanh(s / softcap) before the mask; the caches' values times k_scale, v_scale (fp8 codes)."""
    B, Hq, Sq, D = q.shape
    scale = check_scale(scale, D)
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.full((B, Hq, Sq), -math.inf, dtype=torch.float64, device=q.device)
    for b, length in enumerate(cache_seqlens.clamp(0, cache_capacity(k_cache, block_table)).tolist()):
        table = None if block_table is None else block_table[b:b + 1]
        k, v = (gather_cache(cache if table is not None else cache[b:b + 1], table, 1, length)[0].double()
                .repeat_interleave(Hq // k_cache.shape[1], 0) * s for cache, s in ((k_cache, k_scale),
                                                                                   (v_cache, v_scale)))  # [Hq, L, D]
        keys, queries = torch.arange(length, device=q.device), torch.arange(Sq, device=q.device)
        seen = keys[None, :] <= queries[:, None] + length - Sq
        if key_mask is not None:
            seen &= key_mask[b, :length]
        scores = q[b].double() @ k.transpose(-1, -2) * scale  # [Hq, Sq, L]
        if softcap is not None:
            scores = torch.tanh(scores / softcap) * softcap
        scores = scores.masked_fill(~seen, -math.inf)
        if sinks is not None:
            scores = torch.cat([scores, sinks.double()[:, None, None].expand(-1, Sq, 1)], -1)
        lse[b] = torch.logsumexp(scores, -1)
        weights = torch.exp(scores - torch.where(torch.isinf(lse[b]), 0.0, lse[b])[..., None])
        out[b] = (weights if sinks is None else weights[..., :-1]) @ v
    return (out, lse) if return_lse else out


def decode_attention_eager(q, k_cache, v_cache, cache_seqlens, block_table=None):
    """What a model writes for one new token a sequence over full caches (the cases'; cache_seqlens unread):
    the materialised attention over the (gathered) caches."""
    length = cache_capacity(k_cache, block_table)
    return attention_eager(q, gather_cache(k_cache, block_table, q.shape[0], length),
                           gather_cache(v_cache, block_table, q.shape[0], length), causal=True)


def decode_attention_cost(shape: tuple[int, ...], dtype: torch.dtype, group: int = 4,
                          cache_itemsize: Optional[int] = None) -> Cost:
    """shape [B, Hq, L, D], one new token a sequence over L cached keys of Hq / group kv heads: q, the keys
    and values (cache_itemsize bytes each: fp8 caches 1; default q's) read once, out written once; 4 * D FLOPs per
    (query, key)."""
    B, Hq, L, D = shape
    cache_itemsize = cache_itemsize or dtype.itemsize
    return Cost(flops=4 * B * Hq * L * D,
                bytes=2 * B * Hq * D * dtype.itemsize + 2 * B * (Hq // group) * L * D * cache_itemsize)


DECODE_GROUP = 4  # Llama-3-8B's 32 query heads over 8 kv heads
PAGE_SIZE = 16


def _make_decode_inputs(shape, dtype, device, paged: bool = False):
    """q [B, Hq, 1, D] and full caches of L keys (contiguous, or paged with shuffled pages)."""
    B, Hq, L, D = shape
    Hkv = Hq // DECODE_GROUP
    q = torch.randn(B, Hq, 1, D, device=device, dtype=dtype)
    seqlens = torch.full((B,), L, dtype=torch.int32, device=device)
    if not paged:
        k, v = (torch.randn(B, Hkv, L, D, device=device, dtype=dtype) for _ in range(2))
        return q, k, v, seqlens
    per_seq = cdiv(L, PAGE_SIZE)
    k, v = (torch.randn(B * per_seq, Hkv, PAGE_SIZE, D, device=device, dtype=dtype) for _ in range(2))
    table = torch.randperm(B * per_seq, device=device).to(torch.int32).view(B, per_seq)
    return q, k, v, seqlens, table


def _sdpa_decode_peer(backend_name: str):
    """SDPA with one backend forced over the full contiguous caches; None when it cannot run here."""
    def factory():
        if not torch.cuda.is_available():
            return None
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)

        def run(q, k, v, seqlens):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

        try:
            probe = _make_decode_inputs((1, 8, 128, 64), torch.bfloat16, "cuda")
            run(*probe)
        except RuntimeError:
            return None
        return run
    return factory


DECODE_SWEEP = (1024, 2048, 4096, 8192, 16384, 32768, 131072)


def decode_cases(tokens: Optional[int] = 131072, heads: int = 32, head_dim: int = 128) -> tuple[tuple[int, ...], ...]:
    """[B, Hq, L, D] with B * L = tokens (from many short sequences to one long one), or B = 1 (tokens None)."""
    return tuple((tokens // L if tokens else 1, heads, L, head_dim) for L in DECODE_SWEEP)


# decode_attention_fp8's caches: randn keys and values held as codes of x / FP8_CASE_SCALE (|x| < 7 within e4m3's 448)
FP8_CASE_SCALE = 1 / 64


def _make_fp8_decode_inputs(shape, dtype, device):
    q, k, v, seqlens = _make_decode_inputs(shape, dtype, device)
    return q, quantize_kv(k, FP8_CASE_SCALE), quantize_kv(v, FP8_CASE_SCALE), seqlens


def _fp8_scaled(fn):
    """fn(q, k_cache, v_cache, seqlens, ..) over the fp8 cases' caches and scales (the registry's run, reference)."""
    return functools.partial(fn, k_scale=FP8_CASE_SCALE, v_scale=FP8_CASE_SCALE)


def _fp8_decode_eager(q, k_cache, v_cache, cache_seqlens):
    """What a model writes over fp8 caches: the codes dequantized to q's dtype, then the 16-bit eager form."""
    return decode_attention_eager(q, (k_cache.to(q.dtype) * FP8_CASE_SCALE), (v_cache.to(q.dtype) * FP8_CASE_SCALE),
                                  cache_seqlens)


DECODE_CHECK_CASES = ((2, 8, 100, 64), (1, 4, 1000, 128))  # `rooftop check`'s shapes
_SDPA_PEERS = {p: _sdpa_decode_peer(b) for p, b in (("sdpa_flash", "FLASH_ATTENTION"),
                                                     ("sdpa_cudnn", "CUDNN_ATTENTION"),
                                                     ("sdpa_efficient", "EFFICIENT_ATTENTION"))}
for _suffix, _paged, _tokens in (("", False, 131072), ("_paged", True, 131072), ("_b1", False, None)):
    registry.register(registry.OpSpec(
        name="decode_attention" + _suffix, family="decode_attention",
        make_inputs=lambda shape, dtype, device, p=_paged: _make_decode_inputs(shape, dtype, device, p),
        run=decode_attention, reference=decode_attention_reference, eager=decode_attention_eager,
        cost=decode_attention_cost, cases=decode_cases(_tokens), check_cases=DECODE_CHECK_CASES,
        peers={} if _paged else _SDPA_PEERS, x_key="S"))
registry.register(registry.OpSpec(  # heads of 512 (Gemma 4's full layers), past attention's and SDPA flash's 256
    name="decode_attention_d512", family="decode_attention", make_inputs=_make_decode_inputs,
    run=decode_attention, reference=decode_attention_reference, eager=decode_attention_eager,
    cost=decode_attention_cost, cases=decode_cases(131072, head_dim=512), check_cases=((1, 8, 100, 512),),
    peers=_SDPA_PEERS, x_key="S"))
registry.register(registry.OpSpec(
    name="decode_attention_fp8", family="decode_attention", make_inputs=_make_fp8_decode_inputs,
    run=_fp8_scaled(decode_attention), reference=_fp8_scaled(decode_attention_reference), eager=_fp8_decode_eager,
    cost=functools.partial(decode_attention_cost, cache_itemsize=1), cases=decode_cases(131072),
    check_cases=DECODE_CHECK_CASES, x_key="S"))


STATIC_CAPACITY = 8192


def _static_cache_table(ceilings) -> list[dict]:
    """Graph-replayed microseconds of one decode step's attention over a static cache of STATIC_CAPACITY keys
    holding L: rooftop reads the L keys (cache_seqlens), SDPA (torch's choice of backend, as a model calls it
    with a static cache) reads all of them under a mask."""
    import torch.nn.functional as F

    from rooftop.bench.timing import graph_replay_us

    rows = []
    for L in (256, 1024, 4096, 8192):
        shape = (1, 32, STATIC_CAPACITY, 128)
        q, k, v, seqlens = _make_decode_inputs(shape, torch.bfloat16, "cuda")
        seqlens.fill_(L)
        mask = (torch.arange(STATIC_CAPACITY, device="cuda") < L)[None, None, None, :]
        ours = decode_attention(q, k, v, seqlens)
        theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        floor_us = decode_attention_cost((1, 32, L, 128), torch.bfloat16).bytes / (ceilings.copy_GBps * 1e3)
        rows.append({"shape": [1, 32, L, 128], "capacity": STATIC_CAPACITY,
                     "rooftop_us": graph_replay_us([lambda: decode_attention(q, k, v, seqlens)]),
                     "sdpa_masked_us": graph_replay_us(
                         [lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)]),
                     "floor_us": floor_us,
                     "max_abs_diff": float((ours.float() - theirs.float()).abs().max())})
    return rows


registry.register_table(registry.FamilyTable(
    family="decode_attention", title=f"One decode step's attention over a static cache of {STATIC_CAPACITY} keys "
    "holding L (B = 1, 32 query / 8 kv heads, D = 128, bf16; GPU microseconds by graph replay, L2 warm; floor: "
    "the L keys and values at the copy bandwidth)", make=_static_cache_table))
