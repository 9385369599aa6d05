r"""Rotary position embeddings (RoPE) applied to q and k in one launch.

For a head vector x of width D, rotary width rd (even, <= D) and, at the token's position p,
c_i = cos(p theta_i), s_i = sin(p theta_i) for the rd/2 frequencies theta_i:

    NeoX layout (interleaved=False; Llama, Mistral, Qwen, ... as Hugging Face writes them):
        (x1, x2) = (x[:rd/2], x[rd/2:rd])
        out[:rd/2]     = x1 c - x2 s
        out[rd/2:rd]   = x2 c + x1 s              ( = x cos + rotate_half(x) sin )
    GPT-J layout (interleaved=True): pairs (x[2i], x[2i+1]) rotate by frequency i
        out[2i]   = x[2i] c_i - x[2i+1] s_i
        out[2i+1] = x[2i+1] c_i + x[2i] s_i
    out[rd:D] = x[rd:D]                           (partial rotary: GPT-NeoX, Phi, GPT-J)

cos/sin come as Hugging Face computes them: [S, rd] or [B, S, rd] (or [1, S, rd]), the two halves
repeated (cos = cat(freqs, freqs).cos()), so cos[..., i] for i < rd/2 holds frequency i in both
layouts and the kernel reads only that first half; or [..., rd/2], one value a frequency, with any stride between
them (Hugging Face's GPT-J-style models repeat each value twice, cos = repeat_interleave(freqs, 2).cos(): their
cos[..., ::2] is that form, no copy). With position_ids ([S] or [B, S], int32/int64)
cos/sin are a table [max_pos, rd or rd/2] whose rows are gathered at the positions; positions are not
checked against max_pos (that would synchronise with the device).

q [B, Hq, S, D] and k [B, Hkv, S, D] (Hq != Hkv for GQA) may be strided views, e.g. of a fused qkv
projection, as long as the head dim is unit-stride. Computed in fp32, rounded once to q's dtype.

The kernel: one program per token (b, s). It reads the token's rd/2 cosines and sines once, then
q's heads and k's heads, BLOCK_H heads at a time (a [BLOCK_H, rd/2] tile for each half, or for
GPT-J one contiguous [BLOCK_H, rd] tile split into even and odd lanes in registers), and
writes them. Traffic: q and k read once and written once (in place with partial rotary: the
pass-through dims are neither read nor written), plus rd/2 cosines and sines per token.

apply_rope_append_kv: the same kernel (APPEND) writes the rotated k, and v, into a cache [B_cache, Hkv, S_max, D]
at row cache_lengths[b] + s instead of k_out, and the last program to have read a length advances it by S (as
append_kv): a decode step's RoPE and static-cache update in one launch. Traffic: q, k and v read once, q_out and
the cache rows written once.

Host path: apply_rope is `planned` (ops/_support.py): a repeated call with the same argument signature replays
the first one's launch on its own tensors, without the checks.
"""
from __future__ import annotations

import functools
from typing import Optional

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (arrival_counters, await_previous, check_float, check_same_device, launch, pdl_options,
                                  planned, runs_kernel, torch_op)
from rooftop.ops.decode_attention import (advance_length, append_kv_reference, cache_capacity, cache_rows,
                                          cache_values, check_append, check_kv_scales)
from rooftop.roofline import Cost

# Launch parameters (to be tuned on the H200).
BLOCK_ELEMS = 4096  # elements of one tile of heads (BLOCK_H heads x head dim padded to a power of 2)
NUM_WARPS = 4

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _rope_heads(x_tok, out_tok, n_heads, x_head_stride, out_head_stride, cos, sin, inverse_scale,
                HEAD_DIM: tl.constexpr, HALF: tl.constexpr, BLOCK_HALF: tl.constexpr, BLOCK_PASS: tl.constexpr,
                BLOCK_H: tl.constexpr, INTERLEAVED: tl.constexpr, COPY_PASS: tl.constexpr):
    """Rotates the first 2*HALF dims of one token's `n_heads` heads, BLOCK_H heads at a time; with
    COPY_PASS also copies dims 2*HALF..HEAD_DIM. cos, sin: [BLOCK_HALF] fp32. An fp8 out gets codes of the values
    times inverse_scale (cache_values)."""
    i = tl.arange(0, BLOCK_HALF)
    for h0 in range(0, n_heads, BLOCK_H):
        heads = h0 + tl.arange(0, BLOCK_H)
        head_mask = heads < n_heads
        x_heads = x_tok + heads.to(tl.int64) * x_head_stride
        out_heads = out_tok + heads.to(tl.int64) * out_head_stride
        if INTERLEAVED:
            # the rotated dims as one contiguous [BLOCK_H, 2 * BLOCK_HALF] tile (wide vector loads),
            # split into the even and odd lanes of the pairs in registers
            cols = tl.arange(0, 2 * BLOCK_HALF)
            mask = head_mask[:, None] & (cols < 2 * HALF)[None, :]
            x = tl.load(x_heads[:, None] + cols[None, :], mask=mask).to(tl.float32)
            x1, x2 = tl.split(tl.reshape(x, [BLOCK_H, BLOCK_HALF, 2]))
            y = tl.join(x1 * cos[None, :] - x2 * sin[None, :], x2 * cos[None, :] + x1 * sin[None, :])
            y = cache_values(tl.reshape(y, [BLOCK_H, 2 * BLOCK_HALF]), inverse_scale, out_tok)
            tl.store(out_heads[:, None] + cols[None, :], y.to(out_tok.dtype.element_ty), mask=mask)
        else:
            mask = head_mask[:, None] & (i < HALF)[None, :]
            x1 = tl.load(x_heads[:, None] + i[None, :], mask=mask).to(tl.float32)
            x2 = tl.load(x_heads[:, None] + HALF + i[None, :], mask=mask).to(tl.float32)
            y1 = x1 * cos[None, :] - x2 * sin[None, :]
            y2 = x2 * cos[None, :] + x1 * sin[None, :]
            y1 = cache_values(y1, inverse_scale, out_tok)
            y2 = cache_values(y2, inverse_scale, out_tok)
            tl.store(out_heads[:, None] + i[None, :], y1.to(out_tok.dtype.element_ty), mask=mask)
            tl.store(out_heads[:, None] + HALF + i[None, :], y2.to(out_tok.dtype.element_ty), mask=mask)
        if COPY_PASS:
            _copy_dims(x_heads, out_heads, head_mask, 2 * HALF, HEAD_DIM, BLOCK_PASS, inverse_scale)


@triton.jit
def _copy_dims(x_heads, out_heads, head_mask, first, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr, inverse_scale):
    """Dims first..HEAD_DIM of the heads at x_heads ([BLOCK_H] pointers) to out_heads (fp8: codes of the values times
    inverse_scale)."""
    cols = first + tl.arange(0, BLOCK)
    mask = head_mask[:, None] & (cols < HEAD_DIM)[None, :]
    x = cache_values(tl.load(x_heads[:, None] + cols[None, :], mask=mask), inverse_scale, out_heads)
    tl.store(out_heads[:, None] + cols[None, :], x, mask=mask)


@triton.jit
def _copy_heads(x_tok, out_tok, n_heads, x_head_stride, out_head_stride, inverse_scale, HEAD_DIM: tl.constexpr,
                BLOCK_D: tl.constexpr, BLOCK_H: tl.constexpr):
    """One token's `n_heads` heads copied whole, BLOCK_H heads at a time (fp8 out: _copy_dims)."""
    for h0 in range(0, n_heads, BLOCK_H):
        heads = h0 + tl.arange(0, BLOCK_H)
        _copy_dims(x_tok + heads.to(tl.int64) * x_head_stride, out_tok + heads.to(tl.int64) * out_head_stride,
                   heads < n_heads, 0, HEAD_DIM, BLOCK_D, inverse_scale)


@triton.jit
def _rope_kernel(q_ptr, k_ptr, q_out_ptr, k_out_ptr, cos_ptr, sin_ptr, pos_ptr, S, HQ, HK,
                 q_sb, q_sh, q_ss, k_sb, k_sh, k_ss, qo_sb, qo_sh, qo_ss, ko_sb, ko_sh, ko_ss,
                 cos_sb, cos_ss, cos_sd, sin_sb, sin_ss, sin_sd, pos_sb, pos_ss,
                 v_ptr, v_out_ptr, lengths, counters, block_table, capacity, v_sb, v_sh, v_ss, vo_sb, vo_sh, vo_ss,
                 table_sb, k_inverse, v_inverse, HEAD_DIM: tl.constexpr, HALF: tl.constexpr, BLOCK_HALF: tl.constexpr,
                 BLOCK_PASS: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_HQ: tl.constexpr, BLOCK_HK: tl.constexpr,
                 INTERLEAVED: tl.constexpr, COPY_PASS: tl.constexpr, HAS_POS: tl.constexpr, APPEND: tl.constexpr,
                 PER_SEQUENCE: tl.constexpr, PAGE_SIZE: tl.constexpr, PDL: tl.constexpr):
    # One program per token: reads its HALF cosines and sines once, its HQ + HK heads of q and k once
    # (the rotated dims, and with COPY_PASS the rest), writes them once. *_sb/_sh/_ss: strides of
    # batch, head, sequence (cos/sin/pos: batch 0 when broadcast; with HAS_POS cos_ss is the table's); cos_sd / sin_sd:
    # between frequencies (1 for halves repeated and for one value a frequency, 2 for pairs repeated seen through a
    # view [..., ::2]).
    # APPEND: k_out / v_out are a cache of `capacity` rows a sequence (contiguous, or paged: PAGE_SIZE > 0 and
    # block_table); the token's rotated k and its v (read once, written once) go to row lengths[b] + s (rows past the
    # capacity dropped), and the last of the length's readers to arrive adds S to it (PER_SEQUENCE: a length a
    # sequence, else one for all). An fp8 cache (FP8_KV) gets codes of k / k_scale and v / v_scale (k_inverse =
    # 1 / k_scale; append_kv's, rounded once from the fp32 rotation).
    # PDL: the launch overlaps the kernel before it (_support.pdl_options).
    await_previous(PDL)
    token = tl.program_id(0)
    b = (token // S).to(tl.int64)
    s = (token % S).to(tl.int64)
    k_row = b * ko_sb + s * ko_ss
    kv_heads = HK
    if APPEND:
        start = tl.load(lengths + b * PER_SEQUENCE)
        in_cache = (start + s >= 0) & (start + s < capacity)
        kv_heads = tl.where(in_cache, HK, 0)
        k_row = cache_rows(block_table + b * table_sb, b, start + s, in_cache, ko_sb, ko_ss, PAGE_SIZE)
        v_row = cache_rows(block_table + b * table_sb, b, start + s, in_cache, vo_sb, vo_ss, PAGE_SIZE)
    if HAS_POS:
        pos = tl.load(pos_ptr + b * pos_sb + s * pos_ss).to(tl.int64)
        cos_row = cos_ptr + pos * cos_ss
        sin_row = sin_ptr + pos * sin_ss
    else:
        cos_row = cos_ptr + b * cos_sb + s * cos_ss
        sin_row = sin_ptr + b * sin_sb + s * sin_ss
    i = tl.arange(0, BLOCK_HALF)
    cos = tl.load(cos_row + i * cos_sd, mask=i < HALF, other=0.0).to(tl.float32)
    sin = tl.load(sin_row + i * sin_sd, mask=i < HALF, other=0.0).to(tl.float32)
    _rope_heads(q_ptr + b * q_sb + s * q_ss, q_out_ptr + b * qo_sb + s * qo_ss, HQ, q_sh, qo_sh, cos, sin, 1.0,
                HEAD_DIM, HALF, BLOCK_HALF, BLOCK_PASS, BLOCK_HQ, INTERLEAVED, COPY_PASS)
    _rope_heads(k_ptr + b * k_sb + s * k_ss, k_out_ptr + k_row, kv_heads, k_sh, ko_sh, cos, sin, k_inverse,
                HEAD_DIM, HALF, BLOCK_HALF, BLOCK_PASS, BLOCK_HK, INTERLEAVED, COPY_PASS)
    if APPEND:
        _copy_heads(v_ptr + b * v_sb + s * v_ss, v_out_ptr + v_row, kv_heads, v_sh, vo_sh, v_inverse, HEAD_DIM,
                    BLOCK_D, BLOCK_HK)
        advance_length(lengths, counters, b, start, S, S, PER_SEQUENCE)  # a sequence's S tokens read its length


# ---------------------------------------------------------------------------------------------
# Launch configuration


@functools.lru_cache(maxsize=1024)
def heads_per_tile(n_heads: int, head_dim: int) -> int:
    """BLOCK_H: heads a tile holds, so that a tile is about BLOCK_ELEMS elements."""
    return max(1, min(triton.next_power_of_2(max(n_heads, 1)), BLOCK_ELEMS // triton.next_power_of_2(head_dim)))


def _batch_seq_strides(t: torch.Tensor, lead: int) -> tuple[int, int]:
    """(batch, sequence) strides of `t` whose `lead` leading dims are [S] or [B or 1, S]."""
    if lead == 1:
        return 0, t.stride(0)
    return (t.stride(0) if t.shape[0] > 1 else 0), t.stride(1)


def rope_launch(q, k, q_out, k_out, cos, sin, position_ids, interleaved: bool, rotary_dim: int,
                append: Optional[tuple] = None) -> None:
    """q_out, k_out <- rope(q), rope(k); the outputs may be q and k themselves (in place). append = (v, v_cache,
    cache_lengths, block_table or None, k_scale, v_scale): k_out is a k cache, the rotated k and v go to its and
    v_cache's rows at the lengths, which advance (apply_rope_append_kv; fp8 caches: codes at the scales)."""
    B, HQ, S, D = q.shape
    HK = k.shape[1]
    if B * S == 0 or HQ + HK == 0:
        return
    half = rotary_dim // 2
    has_pos = position_ids is not None
    cos_sb, cos_ss = _batch_seq_strides(cos, cos.dim() - 1)
    sin_sb, sin_ss = _batch_seq_strides(sin, sin.dim() - 1)
    pos_sb, pos_ss = _batch_seq_strides(position_ids, position_ids.dim()) if has_pos else (0, 0)
    v, v_out, lengths, table, k_scale, v_scale = append if append is not None else (k, k_out, cos, None, 1.0, 1.0)
    # (v, v_out, lengths: unread without APPEND)
    per_sequence = lengths.numel() > 1
    counters = arrival_counters(q.device, B if per_sequence else 1) if append is not None else cos
    launch(_rope_kernel, (B * S,), q, k, q_out, k_out, cos, sin, position_ids if has_pos else cos, S, HQ, HK,
           q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2), q_out.stride(0),
           q_out.stride(1), q_out.stride(2), k_out.stride(0), k_out.stride(1), k_out.stride(2), cos_sb, cos_ss,
           cos.stride(-1), sin_sb, sin_ss, sin.stride(-1), pos_sb, pos_ss, v, v_out, lengths, counters,
           cos if table is None else table,
           cache_capacity(k_out, table), v.stride(0), v.stride(1), v.stride(2), v_out.stride(0), v_out.stride(1),
           v_out.stride(2), 0 if table is None else table.stride(0), 1.0 / k_scale, 1.0 / v_scale, HEAD_DIM=D,
           HALF=half,
           BLOCK_HALF=triton.next_power_of_2(half), BLOCK_PASS=triton.next_power_of_2(max(D - rotary_dim, 1)),
           BLOCK_D=triton.next_power_of_2(D), BLOCK_HQ=heads_per_tile(HQ, D), BLOCK_HK=heads_per_tile(HK, D),
           INTERLEAVED=interleaved, COPY_PASS=rotary_dim < D and k_out is not k, HAS_POS=has_pos,
           APPEND=append is not None, PER_SEQUENCE=per_sequence, PAGE_SIZE=0 if table is None else k_out.shape[2],
           num_warps=NUM_WARPS, **pdl_options(q))


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _rope_fake(q, k, cos, sin, position_ids, interleaved, rotary_dim):
    return torch.empty_like(q), torch.empty_like(k)


def _rope_into(q, k, q_out, k_out, cos, sin, position_ids, interleaved, rotary_dim) -> None:
    """Rotated q, k into q_out, k_out (which may be q, k): the kernel, or the reference off-GPU."""
    if runs_kernel(q):
        rope_launch(q, k, q_out, k_out, cos, sin, position_ids, interleaved, rotary_dim)
    else:
        q_ref, k_ref = rope_reference(q, k, cos, sin, position_ids, interleaved, rotary_dim)
        q_out.copy_(q_ref)
        k_out.copy_(k_ref)


@torch_op("apply_rope", fake=_rope_fake)
def _rope_op(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
             position_ids: Optional[torch.Tensor], interleaved: bool,
             rotary_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    # empty_like keeps q's layout when q is dense (e.g. [B, S, H, D] memory seen as [B, H, S, D])
    q_out, k_out = torch.empty_like(q), torch.empty_like(k)
    _rope_into(q, k, q_out, k_out, cos, sin, position_ids, interleaved, rotary_dim)
    return q_out, k_out


@torch_op("apply_rope_", mutates_args=("q", "k"))
def _rope_inplace_op(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                     position_ids: Optional[torch.Tensor], interleaved: bool, rotary_dim: int) -> None:
    _rope_into(q, k, q, k, cos, sin, position_ids, interleaved, rotary_dim)


def _check(q, k, cos, sin, position_ids, rotary_dim) -> int:
    """Checks every argument; returns the rotary dim."""
    check_float("q", q)
    check_float("k", k)
    q_shape, k_shape = q.shape, k.shape
    for name, shape in (("q", q_shape), ("k", k_shape)):
        if len(shape) != 4:
            raise ValueError(f"{name} must be 4-D [B, H, S, D], got shape {tuple(shape)}")
    check_same_device("k", k, "q", q)
    if k.dtype != q.dtype:
        raise TypeError(f"k has dtype {k.dtype} but q has {q.dtype}")
    B, _, S, D = q_shape
    if k_shape[0] != B or k_shape[2] != S or k_shape[3] != D:
        raise ValueError(f"k has shape {tuple(k_shape)} but q has {tuple(q_shape)}: B, S and D must match")
    for name, t in (("q", q), ("k", k)):
        if t.stride(3) != 1 and t.numel() > 0:
            raise ValueError(f"{name} must have unit stride in its head dim (last), got stride {t.stride(3)}")
    rd = D if rotary_dim is None else rotary_dim
    if type(rd) is not int:
        raise TypeError(f"rotary_dim must be an int, got {type(rd).__name__}")
    if rd % 2 or not 2 <= rd <= D:
        raise ValueError(f"rotary_dim must be even and in [2, D={D}], got {rd}")
    check_float("cos", cos)
    check_float("sin", sin)
    check_same_device("cos", cos, "q", q)
    check_same_device("sin", sin, "q", q)
    cos_shape = cos.shape
    if position_ids is None:
        expected = "[S, rotary_dim] or [B or 1, S, rotary_dim]"
        rows_ok = (len(cos_shape) == 2 and cos_shape[0] == S) or \
                  (len(cos_shape) == 3 and cos_shape[0] in (1, B) and cos_shape[1] == S)
    else:
        if not isinstance(position_ids, torch.Tensor):
            raise TypeError(f"position_ids must be a torch.Tensor, got {type(position_ids).__name__}")
        if position_ids.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"position_ids has dtype {str(position_ids.dtype).replace('torch.', '')}; "
                            "expected int32 or int64")
        check_same_device("position_ids", position_ids, "q", q)
        pos_shape = position_ids.shape
        if not ((len(pos_shape) == 1 and pos_shape[0] == S) or
                (len(pos_shape) == 2 and pos_shape[0] in (1, B) and pos_shape[1] == S)):
            raise ValueError(f"position_ids must have shape [S] or [B or 1, S] with B={B}, S={S}, "
                             f"got {tuple(pos_shape)}")
        expected = "[max_position, rotary_dim] (a table indexed by position_ids)"
        rows_ok = len(cos_shape) == 2
    if not rows_ok or cos_shape[-1] not in (rd, rd // 2):
        raise ValueError(f"cos has shape {tuple(cos_shape)}; expected {expected} with B={B}, S={S}, "
                         f"rotary_dim={rd} (or rotary_dim / 2 = {rd // 2}: one value a frequency)")
    if sin.shape != cos_shape:
        raise ValueError(f"sin has shape {tuple(sin.shape)} but cos has {tuple(cos_shape)}")
    return rd


@planned
def apply_rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
               position_ids: Optional[torch.Tensor] = None, interleaved: bool = False,
               rotary_dim: Optional[int] = None, inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary embeddings of q [B, Hq, S, D] and k [B, Hkv, S, D] in one launch -> (q_out, k_out).

    cos, sin: [S, rd] or [B, S, rd] as Hugging Face computes them (halves repeated), or [..., rd / 2] (one value a
    frequency, any stride: Hugging Face's pairs repeated for GPT-J are cos[..., ::2]); with position_ids ([S] or
    [B, S]) a table [max_pos, rd or rd / 2] gathered at those positions. interleaved: GPT-J pairs (x[2i], x[2i+1])
    instead of NeoX halves. rotary_dim (default D): rotate the first rd dims, pass the rest through. inplace: write
    into q and k and return them."""
    rd = _check(q, k, cos, sin, position_ids, rotary_dim)
    if inplace:
        _rope_inplace_op(q, k, cos, sin, position_ids, bool(interleaved), rd)
        return q, k
    return _rope_op(q, k, cos, sin, position_ids, bool(interleaved), rd)


def _rope_append_fake(q, k, v, cos, sin, k_cache, v_cache, cache_lengths, block_table, position_ids, interleaved,
                      rotary_dim, k_scale, v_scale):
    return torch.empty_like(q)


@torch_op("apply_rope_append_kv", mutates_args=("k_cache", "v_cache", "cache_lengths"), fake=_rope_append_fake)
def _rope_append_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                    k_cache: torch.Tensor, v_cache: torch.Tensor, cache_lengths: torch.Tensor,
                    block_table: Optional[torch.Tensor], position_ids: Optional[torch.Tensor], interleaved: bool,
                    rotary_dim: int, k_scale: float, v_scale: float) -> torch.Tensor:
    q_out = torch.empty_like(q)
    if runs_kernel(q):
        rope_launch(q, k, q_out, k_cache, cos, sin, position_ids, interleaved, rotary_dim,
                    append=(v, v_cache, cache_lengths, block_table, k_scale, v_scale))
    else:
        q_ref, k_ref = rope_reference(q, k, cos, sin, position_ids, interleaved, rotary_dim)
        q_out.copy_(q_ref)
        append_kv_reference(k_cache, v_cache, k_ref.float(), v, cache_lengths, block_table, k_scale, v_scale)
    return q_out


@planned
def apply_rope_append_kv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                         k_cache: torch.Tensor, v_cache: torch.Tensor, cache_lengths: torch.Tensor,
                         block_table: Optional[torch.Tensor] = None, position_ids: Optional[torch.Tensor] = None,
                         interleaved: bool = False, rotary_dim: Optional[int] = None, k_scale: Optional[float] = None,
                         v_scale: Optional[float] = None) -> torch.Tensor:
    """apply_rope(q, k, ...) and append_kv(k_cache, v_cache, rotated k, v, cache_lengths, block_table) in one launch:
    returns the rotated q (a new tensor); the rotated k and v go to rows cache_lengths[b] .. + S - 1 of sequence b's
    cache (contiguous [B_cache >= B, Hkv, S_max, D], or paged [pages, Hkv, page_size, D] through block_table; rows
    past the capacity dropped) and cache_lengths ([], [1] or [B]; int32 / int64) advance by S. A decode step's RoPE
    and cache update (Hugging Face: RoPE, then StaticLayer.update's four kernels). fp8 caches (torch.float8_e4m3fn):
    codes of the rotated k / k_scale and v / v_scale as append_kv writes them (per-tensor floats, default 1.0), the
    rotation rounded once, to the code."""
    rd = _check(q, k, cos, sin, position_ids, rotary_dim)
    check_append(k_cache, v_cache, k, v, cache_lengths, block_table, fp8_kv=True)
    return _rope_append_op(q, k, v, cos, sin, k_cache, v_cache, cache_lengths, block_table, position_ids,
                           bool(interleaved), rd, *check_kv_scales(k_cache, k_scale, v_scale))


# ---------------------------------------------------------------------------------------------
# Reference, eager form (Hugging Face's), cost, cases


def rotary_cos_sin(positions: torch.Tensor, dim: int, base: float = 10000.0,
                   dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [*positions.shape, dim] as Hugging Face's rotary embedding computes them."""
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, device=positions.device, dtype=torch.float64) / dim)
    freqs = positions.double()[..., None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    """Hugging Face's: (x1, x2) -> (-x2, x1) over the two halves of the last dim."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    """Hugging Face's GPT-J: pairs (x[2i], x[2i+1]) -> (-x[2i+1], x[2i])."""
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_pos_emb(q, k, cos, sin, interleaved=False, rotary_dim=None):
    """Hugging Face's apply_rotary_pos_emb (cos/sin [S, rd] or [B, S, rd], unsqueezed over heads),
    with GPT-J's interleaved pairs and the partial rotary of GPT-NeoX / Phi."""
    rd = rotary_dim or q.shape[-1]
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    if interleaved:
        cos = cos[..., : rd // 2].repeat_interleave(2, dim=-1)
        sin = sin[..., : rd // 2].repeat_interleave(2, dim=-1)
    rotate = rotate_every_two if interleaved else rotate_half

    def embed(x):
        x_rot, x_pass = x[..., :rd], x[..., rd:]
        return torch.cat(((x_rot * cos) + (rotate(x_rot) * sin), x_pass), dim=-1)

    return embed(q), embed(k)


def rope_reference(q, k, cos, sin, position_ids=None, interleaved=False, rotary_dim=None):
    """The same maths in float64 (cos/sin gathered at position_ids first when given; one value a frequency repeated
    as halves)."""
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    if cos.shape[-1] != (rotary_dim or q.shape[-1]):
        cos, sin = torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)
    return apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double(), interleaved, rotary_dim)


def _kv_heads(n_heads: int) -> int:
    """Benchmark k heads: GQA with 4 query heads per k head (32 -> 8, as Llama 3 8B)."""
    return max(1, n_heads // 4)


def rope_cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
    B, H, S, D = shape
    heads = B * (H + _kv_heads(H)) * S
    # q and k read and written once; D/2 cosines and sines per token; 6 FLOPs per rotated pair
    return Cost(flops=3 * heads * D, bytes=(2 * heads * D + S * D) * dtype.itemsize)


def _make_rope(shape, dtype, device):
    """As in a Hugging Face attention layer: q and k are [B, S, H, D] projections seen as [B, H, S, D]."""
    B, H, S, D = shape
    q = torch.randn((B, S, H, D), device=device, dtype=dtype).transpose(1, 2)
    k = torch.randn((B, S, _kv_heads(H), D), device=device, dtype=dtype).transpose(1, 2)
    cos, sin = rotary_cos_sin(torch.arange(S, device=device)[None], D, dtype=dtype)
    return q, k, cos, sin


def _liger_rope():
    try:
        from liger_kernel.ops.rope import LigerRopeFunction
    except ImportError:
        return None
    return lambda q, k, cos, sin: LigerRopeFunction.apply(q, k, cos, sin, None, 1)


registry.register(registry.OpSpec(
    name="apply_rope", family="rope", make_inputs=_make_rope, run=apply_rope, reference=rope_reference,
    eager=apply_rotary_pos_emb, cost=rope_cost,
    cases=tuple((1, 32, s, 128) for s in (512, 1024, 2048, 4096, 8192, 16384, 32768)),
    peers={"liger": _liger_rope}, x_key="S", check_cases=((1, 4, 17, 64), (2, 8, 5, 128))))
