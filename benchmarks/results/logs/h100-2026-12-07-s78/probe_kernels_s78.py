# Session 78 probe (kept with its logs): the window kernel with each row's key bounds computed once, outside the loop.
import triton
import triton.language as tl
from rooftop.ops.attention import _tile_source, _load_tile, fold_sink, soft_cap


@triton.jit
def _attend_tiles(acc, l_i, m_i, q, k_src, v_src, tb, kv_head, k_start, stride_ks, stride_vs, seqlen_k, row_lo, row_hi,
                  lo, hi, window_left, window_right, qk_scale, softcap,
                  BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr,
                  SOFTCAP: tl.constexpr, PRECISION: tl.constexpr):
    """Online softmax over the key tiles starting at lo, lo + BLOCK_N, ... < hi. MASKED: apply the
    causal/window/sequence-end mask (scores -inf), guarding rows that have seen no key yet; otherwise
    every query of the block sees every key of every tile and no mask is computed. SOFTCAP: the scores
    soft-capped first (softcap in log2 units, as the scaled scores)."""
    offs_n = tl.arange(0, BLOCK_N)
    for n0 in tl.range(lo, hi, BLOCK_N):
        k = _load_tile(k_src, tb, kv_head, k_start, n0, seqlen_k, stride_ks, BLOCK_N, BLOCK_D, D, MASKED)
        qk = tl.dot(q, k.T, input_precision=PRECISION)
        if SOFTCAP:  # scaled and capped here: the scale below is 1
            qk = soft_cap(qk * qk_scale, softcap)
            scale = 1.0
        else:
            scale = qk_scale
        if MASKED:
            k_pos = (n0 + offs_n)[None, :]
            seen = (k_pos >= row_lo[:, None]) & (k_pos <= row_hi[:, None])
            qk = tl.where(seen, qk * scale, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # no key seen yet: exp2(-inf) = 0, not NaN
            p = tl.math.exp2(qk - m_ref[:, None])
            alpha = tl.math.exp2(m_i - m_ref)
        else:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * scale)  # scale > 0: max commutes with it
            p = tl.math.exp2(qk * scale - m_new[:, None])
            alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_tile(v_src, tb, kv_head, k_start, n0, seqlen_k, stride_vs, BLOCK_N, BLOCK_D, D, MASKED)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_fwd_kernel(q, k, v, o, lse, sinks, cu_seqlens_q, cu_seqlens_k,
                          stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                          stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
                          n_q_heads, seqlen_q, seqlen_k, kv_group, tiles_m, qk_scale, window_left, window_right,
                          softcap, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                          VARLEN: tl.constexpr, MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr,
                          WRITE_LSE: tl.constexpr, USE_TMA: tl.constexpr, SINKS: tl.constexpr,
                          SOFTCAP: tl.constexpr, PRECISION: tl.constexpr, HEADS: tl.constexpr,
                          SINGLE_LOOP: tl.constexpr):
    # Reads the q tile once, each k/v tile of the key range once (BLOCK_N * D * 2 * itemsize bytes per
    # step, mostly from L2: the programs of one head run side by side), writes out (and lse) once; with
    # SINKS, each row's head's sink.
    # One program per (query tile, batch * head), the query tiles of one head adjacent in launch order:
    # the programs in flight share a few heads' k/v, read from HBM once and from L2 by the rest. (With
    # the heads adjacent instead, every program read its head's k/v from HBM: at BLOCK_M = 128 that is
    # 128 FLOP a byte, under the H200's ridge, so short sequences ran memory-bound.)
    # HEADS > 1: the tile's rows are BLOCK_Q queries of each of HEADS query heads of one k/v head (GQA), so a
    # narrow window's key span is BLOCK_Q + window keys, not BLOCK_M + window, and each k/v tile serves HEADS
    # heads (row r: head h + r // BLOCK_Q, query m0 + r % BLOCK_Q).
    BLOCK_Q: tl.constexpr = BLOCK_M // HEADS
    pid = tl.program_id(0)
    bh = pid // tiles_m
    b = bh // (n_q_heads // HEADS)
    h = bh % (n_q_heads // HEADS) * HEADS
    kv_head = h // kv_group
    m0 = (tiles_m - 1 - pid % tiles_m) * BLOCK_Q  # heaviest (last) query tiles of a head first
    if VARLEN:
        tb = 0
        q_start = tl.load(cu_seqlens_q + b)
        seqlen_q = tl.load(cu_seqlens_q + b + 1) - q_start
        k_start = tl.load(cu_seqlens_k + b)
        seqlen_k = tl.load(cu_seqlens_k + b + 1) - k_start
        if m0 >= seqlen_q:  # a tile past a sequence shorter than the longest
            return
    else:
        tb = b
        q_start = 0
        k_start = 0
    q_src = _tile_source(q, tb, h, q_start, seqlen_q, stride_qb, stride_qh, stride_qs, BLOCK_Q, BLOCK_D, D, USE_TMA,
                         HEADS)
    k_src = _tile_source(k, tb, kv_head, k_start, seqlen_k, stride_kb, stride_kh, stride_ks, BLOCK_N, BLOCK_D, D,
                         USE_TMA)
    v_src = _tile_source(v, tb, kv_head, k_start, seqlen_k, stride_vb, stride_vh, stride_vs, BLOCK_N, BLOCK_D, D,
                         USE_TMA)
    q_tile = _load_tile(q_src, tb, h, q_start, m0, seqlen_q, stride_qs, BLOCK_M, BLOCK_D, D, True)

    # The key range of the block, cut at tile boundaries into: masked tiles at the window's left edge
    # [lo, full_lo), tiles every query sees [full_lo, full_hi), masked tiles up to hi (diagonal, right
    # edge, sequence end). q_pos = i' = i + Sk - Sq, the key position query i is aligned to.
    offs_m = tl.arange(0, BLOCK_M)
    rows = m0 + offs_m % BLOCK_Q  # the query of each row
    q_pos = rows + (seqlen_k - seqlen_q)
    first_q = m0 + seqlen_k - seqlen_q
    last_q = tl.minimum(m0 + BLOCK_Q, seqlen_q) - 1 + seqlen_k - seqlen_q
    lo = tl.maximum(first_q - window_left, 0) // BLOCK_N * BLOCK_N
    hi = tl.maximum(tl.minimum(last_q + window_right + 1, seqlen_k), lo)  # hi == lo: no key for the block
    full_lo = tl.minimum(tl.maximum(tl.cdiv(tl.maximum(last_q - window_left, 0), BLOCK_N) * BLOCK_N, lo), hi)
    full_hi = tl.maximum(tl.minimum(tl.maximum(tl.minimum(first_q + window_right + 1, seqlen_k), 0)
                                    // BLOCK_N * BLOCK_N, hi), full_lo)

    row_lo = q_pos - window_left
    row_hi = tl.minimum(q_pos + window_right, seqlen_k - 1)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    if SINGLE_LOOP:  # MASK_LEFT / MASK_RIGHT do not matter here (the launch sets both)
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                      stride_vs, seqlen_k, row_lo, row_hi, lo, hi, window_left, window_right, qk_scale,
                                      softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION)
    else:  # MASK_LEFT / MASK_RIGHT False: that loop is statically empty and left out
        if MASK_LEFT:
            acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                          stride_vs, seqlen_k, row_lo, row_hi, lo, full_lo, window_left, window_right,
                                          qk_scale, softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION)
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                      stride_vs, seqlen_k, row_lo, row_hi, full_lo, full_hi, window_left, window_right,
                                      qk_scale, softcap, BLOCK_N, BLOCK_D, D, False, SOFTCAP, PRECISION)
        if MASK_RIGHT:
            acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                          stride_vs, seqlen_k, row_lo, row_hi, full_hi, hi, window_left, window_right,
                                          qk_scale, softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION)

    if SINKS:
        sink = tl.load(sinks + h) if HEADS == 1 else tl.load(sinks + h + offs_m // BLOCK_Q)
        acc, l_i, m_i = fold_sink(acc, l_i, m_i, sink.to(tl.float32) * 1.4426950408889634)  # x log2 e
    # a query that saw no key (and no sink): l = 0, acc = 0 -> out 0, lse -inf
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    out = (acc * (1.0 / l_safe)[:, None]).to(q_tile.dtype)
    o_dst = _tile_source(o, tb, h, q_start, seqlen_q, stride_ob, stride_oh, stride_os, BLOCK_Q, BLOCK_D, D, USE_TMA,
                         HEADS)
    if isinstance(o_dst, tl.tensor_descriptor):  # clips rows past the sequence and columns past D
        if len(o_dst.block_shape) == 4:
            o_dst.store([tb, h, m0, 0], out.reshape([1, HEADS, BLOCK_Q, BLOCK_D]))
        elif len(o_dst.block_shape) == 3:
            o_dst.store([0, m0, 0], out.reshape([HEADS, BLOCK_Q, BLOCK_D]))
        else:
            o_dst.store([m0, 0], out)
    else:
        cols = tl.arange(0, BLOCK_D)
        tl.store(o_dst + rows.to(tl.int64)[:, None] * stride_os + cols[None, :], out,
                 mask=(rows < seqlen_q)[:, None] & (cols < D)[None, :])
    if WRITE_LSE:
        lse_head = lse + tl.cast(tb, tl.int64) * stride_lb + tl.cast(h, tl.int64) * stride_lh + q_start
        lse_val = tl.where(l_i > 0, (m_i + tl.math.log2(l_safe)) * 0.6931471805599453, -float("inf"))  # * ln 2
        tl.store(lse_head + (offs_m // BLOCK_Q) * stride_lh + rows, lse_val, mask=rows < seqlen_q)


