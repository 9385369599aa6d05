r"""Mixture-of-experts MLP for decoding: each token's top-k experts, gated, weighted by the router and summed.

    out[t] = sum_j w[t, j] * D_e (act(G_e x_t) * (U_e x_t)),   e = idx[t, j],  j < k

x [T, H]; idx [T, k] integer, w [T, k] float (the router's top-k indices and weights); the experts' weights in
transformers' default layout: gate_up [E, 2I, H] (gate rows 0 .. I-1, up rows I .. 2I-1 of each expert), down
[E, H, I]; act silu, gelu (erf) or gelu_tanh. gpt-oss's experts: optional biases (gate_up_bias [E, 2I] added to G_e x
and U_e x, down_bias [E, H] to D_e h) and its clamped gate, "swiglu_oai": h = g' sigmoid(alpha g') (u' + 1) with
g' = min(g, limit), u' = clamp(u, -limit, limit). An index outside [0, E) contributes nothing (transformers' eager loop
skips the expert-parallel sentinel E the same way). fp32 accumulation; h = act(g) * u rounded to x's dtype between the
two projections (as the model's own F.linear outputs are), the sum over j in fp32, out in x's dtype.
Quantized experts (weight-only): gate_up and down as float8_e4m3fn or int8 codes with a scale per output row
(gate_up_scale [E, 2I], down_scale [E, H], fp32: W_e ~= codes_e * scale_e[:, None]; `quantize_experts`); each row's
dot product is scaled once at its end; x, h and out keep x's dtype. Half the weight bytes of bf16: decode's traffic
halved. int8 (symmetric, 127 levels a side) keeps ~0.4% of a random weight row, e4m3 ~2.5%.

Two kernels, with no host synchronisation (the routing stays on the GPU: the step can be a CUDA graph):
- `_moe_gate_up_kernel`, program (pair s = t k + j, BLOCK_N columns of I): reads x_t, the pair's expert's BLOCK_N
  gate rows and BLOCK_N up rows (2 BLOCK_N H elements, once) and writes h[s, cols] = act(g) * u.
- `_moe_down_kernel`, program (token t, BLOCK_N columns of H, a range of I): for j = 0 .. k-1 in order reads its
  range of h[t k + j] and of the pair's expert's BLOCK_N down rows (each element once over the ranges), and
  out[t, cols] = sum_j w[t, j] (D_e h)[cols] comes from the ranges' fp32 partials summed in order by the tile's last
  range (deterministic; one range: written directly). A decode step has few tokens: I is split to fill the GPU.
HBM: each (token, expert) pair reads its expert's 3 H I weights once: decode's traffic while T k <= E and the
tokens pick distinct experts; tokens sharing an expert read it again (from L2 when their programs run close). For
prefill (many tokens an expert) a grouped GEMM is what fits: `patch_model` keeps the model's own experts forward past
MOE_MAX_TOKENS tokens. Both kernels are CUDA-core GEMVs: each lane keeps its products over the k-tiles, reduced once
at the end of the row; the grids are pairs x column blocks (gate / up) and tokens x column blocks x ranges of I
(down).
"""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace
from typing import Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (FLOAT_DTYPES, QUANT_FORMATS, arrival_counters, cdiv, check_float, check_fp8_device,
                                  check_same_device, float32_placeholder, launch, num_sms, planned, provided,
                                  quantize_rows_reference, runs_kernel, store_split_output, torch_op)
from rooftop.ops.activations import _ACT_F64, _activate, _divide
from rooftop.roofline import Cost

ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "swiglu_oai")
INDEX_DTYPES = (torch.int32, torch.int64)
# Up to here (tokens a call) patch_model's experts run these kernels; past it the model's own forward (a grouped
# GEMM's regime: each expert's weights read once for all its tokens, which a pair-a-program GEMV cannot do).
MOE_MAX_TOKENS = 16
# (BLOCK_N, BLOCK_K, num_warps) of the gate / up kernel, and of the down kernel with the programs an SM it aims at
# (I split into as many ranges as make them, at most DOWN_MAX_SPLITS: a decode step has few tokens, H / BLOCK_N
# tiles each): a k-tile of BLOCK_N weight rows x BLOCK_K, its products kept per lane until the end of the row (one
# reduction a program). Of 14 shapes timed on an H100 (session 61, exp_moe_launch.py: Mixtral-8x7B's and
# Qwen3-30B-A3B's experts, 1 and 4 tokens), (8, 256, 2) with 4 an SM was within 8% of each case's best (session 60's
# (16, 256, 4): up to 28% behind; 1 token of Mixtral's 270 against 325 us, 90% of copy).
GATE_UP_LAUNCH = (8, 256, 2)
DOWN_LAUNCH = (8, 256, 2, 4)
# Quantized experts (one-byte codes): k-tiles twice as wide, so a program's k-step reads the same bytes (not yet timed
# on a GPU; offline sm_90: 120 / 80 registers, no spills; (8, 512, 2) would take 217 for the gate / up kernel)
QUANT_GATE_UP_LAUNCH = (8, 512, 4)
QUANT_DOWN_LAUNCH = (8, 512, 4, 4)
# the experts' code formats (those of the per-token activations): quant name -> their codes' dtype
EXPERT_QUANTS = {quant: dtype for quant, (dtype, _, _) in QUANT_FORMATS.items()}
CODE_DTYPES = tuple(EXPERT_QUANTS.values())
DOWN_MAX_SPLITS = 16


@triton.jit
def _moe_gate_up_kernel(x_ptr, idx_ptr, w_ptr, scale_ptr, bias_ptr, h_ptr, H, I, E, TOP_K, x_stride, we_stride,
                        wn_stride, ACT: tl.constexpr, APPROX: tl.constexpr, SCALED: tl.constexpr,
                        HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr, LIMIT: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    # Program (pair, column block): reads x_t (H elements, L2 after the first pair of the token), 2 BLOCK_N rows of
    # the pair's expert (2 BLOCK_N H elements: each once; SCALED: one-byte codes and 2 BLOCK_N row scales), writes
    # BLOCK_N elements of h.
    pair = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    expert = tl.load(idx_ptr + pair).to(tl.int64)
    live = (expert >= 0) & (expert < E)  # a sentinel (or any index outside the experts) reads nothing
    expert = tl.where(live, expert, 0)
    col_ok = (cols < I) & live
    gate_rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
    up_rows = gate_rows + tl.cast(I, tl.int64) * wn_stride
    x_row = x_ptr + (pair // TOP_K).to(tl.int64) * x_stride
    g = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    u = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
    for k0 in range(0, H, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        xk = tl.load(x_row + ks, mask=ks < H, other=0.0).to(tl.float32)[None, :]
        mask = col_ok[:, None] & (ks[None, :] < H)
        g += tl.load(gate_rows + ks[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32) * xk
        u += tl.load(up_rows + ks[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32) * xk
    g_row, u_row = tl.sum(g, axis=1), tl.sum(u, axis=1)
    if SCALED:  # scale [E, 2I]: the gate rows', then the up rows'
        scale_row = scale_ptr + expert * 2 * I + cols
        g_row *= tl.load(scale_row, mask=col_ok, other=0.0)
        u_row *= tl.load(scale_row + I, mask=col_ok, other=0.0)
    if HAS_BIAS:  # bias [E, 2I], as the weights' rows
        bias_row = bias_ptr + expert * 2 * I + cols
        g_row += tl.load(bias_row, mask=col_ok, other=0.0).to(tl.float32)
        u_row += tl.load(bias_row + I, mask=col_ok, other=0.0).to(tl.float32)
    if ACT == "swiglu_oai":  # min / clamp keep NaN, as torch's clamp does
        g_row = tl.minimum(g_row, LIMIT, propagate_nan=tl.PropagateNan.ALL)
        u_row = tl.clamp(u_row, -LIMIT, LIMIT, propagate_nan=tl.PropagateNan.ALL)
        y = _divide(g_row, 1.0 + tl.exp2(-1.4426950408889634 * ALPHA * g_row), APPROX) * (u_row + 1.0)
    else:
        y = _activate(g_row, ACT, APPROX, False) * u_row
    tl.store(h_ptr + pair.to(tl.int64) * I + cols, y.to(h_ptr.dtype.element_ty), mask=cols < I)


@triton.jit
def _moe_down_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, scale_ptr, bias_ptr, out_ptr, ws_ptr, cnt_ptr, T, H, I, E, TOP_K,
                     k_split, rw_stride, we_stride, wn_stride, out_stride, SCALED: tl.constexpr,
                     HAS_BIAS: tl.constexpr, SPLITS: tl.constexpr, SUM_BATCH: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    # Program (token, column block, split of I): for each of the token's k pairs in order, its k-range of h (from L2)
    # and of BLOCK_N down rows of its expert (each element once over the splits; SCALED: one-byte codes and BLOCK_N row
    # scales); with SPLITS > 1 the fp32 partials (4 BLOCK_N bytes a split) summed in split order by the tile's last
    # split (store_split_output), which writes BLOCK_N elements of out.
    token = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_start = split * k_split
    k_end = tl.minimum(k_start + k_split, I)
    acc = tl.zeros([BLOCK_N], tl.float32)
    for j in range(0, TOP_K):
        pair = token * TOP_K + j
        expert = tl.load(idx_ptr + pair).to(tl.int64)
        live = (expert >= 0) & (expert < E)
        weight = tl.where(live, tl.load(rw_ptr + token.to(tl.int64) * rw_stride + j).to(tl.float32), 0.0)
        expert = tl.where(live, expert, 0)
        col_ok = (cols < H) & live
        rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        h_row = h_ptr + pair.to(tl.int64) * I
        part = tl.zeros([BLOCK_N, BLOCK_K], tl.float32)
        for k0 in range(k_start, k_end, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            hk = tl.load(h_row + ks, mask=ks < k_end, other=0.0).to(tl.float32)[None, :]
            part += tl.load(rows + ks[None, :], mask=col_ok[:, None] & (ks[None, :] < k_end), other=0.0,
                            eviction_policy="evict_first").to(tl.float32) * hk
        row = tl.sum(part, axis=1)
        if SCALED:  # scale [E, H]
            row *= tl.load(scale_ptr + expert * H + cols, mask=col_ok, other=0.0)
        if HAS_BIAS:  # bias [E, H], added by the first range of I only
            row += tl.load(bias_ptr + expert * H + cols, mask=col_ok & (split == 0), other=0.0).to(tl.float32)
        acc += weight * row
    store_split_output(acc[None, :], token + tl.arange(0, 1), cols, T, H, out_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr,
                       token * tl.num_programs(1) + pid_n, split, SPLITS, False, SUM_BATCH)


def _check(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale=None, down_scale=None,
           gate_up_bias=None, down_bias=None, swiglu_alpha=1.702, swiglu_limit=7.0) -> None:
    check_float("x", x)
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D [tokens, hidden], got shape {tuple(x.shape)}")
    if not isinstance(top_k_index, torch.Tensor) or top_k_index.dtype not in INDEX_DTYPES:
        raise TypeError(f"top_k_index must be an int32 or int64 tensor, got "
                        f"{getattr(top_k_index, 'dtype', type(top_k_index).__name__)}")
    check_float("top_k_weights", top_k_weights)
    quantized = isinstance(gate_up, torch.Tensor) and gate_up.dtype in CODE_DTYPES
    check_float("gate_up", gate_up, (*FLOAT_DTYPES, *CODE_DTYPES))
    check_float("down", down, (*FLOAT_DTYPES, *CODE_DTYPES))
    for name, t in (("top_k_index", top_k_index), ("top_k_weights", top_k_weights), ("gate_up", gate_up),
                    ("down", down)):
        check_same_device(name, t, "x", x)
    T, H = x.shape
    if top_k_index.dim() != 2 or top_k_index.shape[0] != T:
        raise ValueError(f"top_k_index must be [tokens, k] = [{T}, k], got shape {tuple(top_k_index.shape)}")
    if top_k_weights.shape != top_k_index.shape:
        raise ValueError(f"top_k_weights must have top_k_index's shape {tuple(top_k_index.shape)}, got "
                         f"{tuple(top_k_weights.shape)}")
    if gate_up.dim() != 3 or gate_up.shape[2] != H or gate_up.shape[1] % 2:
        raise ValueError(f"gate_up must be [experts, 2 * intermediate, hidden] with hidden {H}, got shape "
                         f"{tuple(gate_up.shape)}")
    E, I = gate_up.shape[0], gate_up.shape[1] // 2
    if down.shape != (E, H, I):
        raise ValueError(f"down must be [experts, hidden, intermediate] = [{E}, {H}, {I}], got shape "
                         f"{tuple(down.shape)}")
    for name, t in (("gate_up", gate_up), ("down", down)):
        if t.dtype != (gate_up.dtype if quantized else x.dtype):
            raise TypeError(f"{name} has dtype {str(t.dtype).replace('torch.', '')} but "
                            + (f"gate_up has {str(gate_up.dtype).replace('torch.', '')} (quantized experts: both "
                               f"the same codes)" if quantized else f"x has {str(x.dtype).replace('torch.', '')}"))
        if t.stride(2) != 1:
            raise ValueError(f"{name} must have unit stride in its last dim, got strides {t.stride()}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    for name, scale, rows in (("gate_up_scale", gate_up_scale, 2 * I), ("down_scale", down_scale, H)):
        if not quantized:
            if scale is not None:
                raise ValueError(f"{name} is only for quantized (float8_e4m3fn or int8) experts; gate_up and down are "
                                 f"{str(gate_up.dtype).replace('torch.', '')}")
            continue
        if scale is None:
            raise ValueError(f"{name} is required with quantized experts: a float32 scale per output row [{E}, {rows}]")
        check_float(name, scale, (torch.float32,))
        if scale.shape != (E, rows):
            raise ValueError(f"{name} must be [{E}, {rows}] (a scale per output row), got shape {tuple(scale.shape)}")
        check_same_device(name, scale, "x", x)
    for name, bias, rows in (("gate_up_bias", gate_up_bias, 2 * I), ("down_bias", down_bias, H)):
        if bias is not None:
            check_float(name, bias)
            if bias.shape != (E, rows):
                raise ValueError(f"{name} must be [{E}, {rows}] (a bias per output row), got shape {tuple(bias.shape)}")
            check_same_device(name, bias, "x", x)
    if activation == "swiglu_oai":
        for name, value in (("swiglu_alpha", swiglu_alpha), ("swiglu_limit", swiglu_limit)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    if gate_up.dtype == torch.float8_e4m3fn:
        check_fp8_device("moe_experts", x.device)


def _gate_f64(gu, I, activation, alpha, limit) -> torch.Tensor:
    """h from one pair's float64 gate / up outputs (biases added)."""
    if activation == "swiglu_oai":
        g, u = gu[:I].clamp(max=limit), gu[I:].clamp(-limit, limit)
        return g * torch.sigmoid(alpha * g) * (u + 1)
    return _ACT_F64[activation](gu[:I]) * gu[I:]


def dequantize_experts(codes: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Quantized experts' weights (or one expert's) as `dtype`: codes [..., out, in] times their row scales
    [..., out], in float64, rounded once."""
    return (codes.double() * scale.double()[..., None]).to(dtype)


def _expert(w, scale, e) -> torch.Tensor:
    """Expert e's weights in float64 (quantized: the codes times their row scales)."""
    return w[e].double() if scale is None else dequantize_experts(w[e], scale[e], torch.float64)


def moe_experts_reference(x, top_k_index, top_k_weights, gate_up, down, activation="silu", gate_up_scale=None,
                          down_scale=None, gate_up_bias=None, down_bias=None, swiglu_alpha=1.702,
                          swiglu_limit=7.0) -> torch.Tensor:
    """The same sum in float64, pair by pair; indices outside [0, E) skipped."""
    E, I = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    for t, j in ((t, j) for t in range(x.shape[0]) for j in range(top_k_index.shape[1])):
        e = int(top_k_index[t, j])
        if 0 <= e < E:
            gu = _expert(gate_up, gate_up_scale, e) @ x[t].double()
            gu = gu if gate_up_bias is None else gu + gate_up_bias[e].double()
            y = _expert(down, down_scale, e) @ _gate_f64(gu, I, activation, swiglu_alpha, swiglu_limit)
            out[t] += float(top_k_weights[t, j]) * (y if down_bias is None else y + down_bias[e].double())
    return out


def _moe_fake(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale, gate_up_bias,
              down_bias, swiglu_alpha, swiglu_limit):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("moe_experts", fake=_moe_fake)
def _moe_experts_op(x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor, gate_up: torch.Tensor,
                    down: torch.Tensor, activation: str, gate_up_scale: Optional[torch.Tensor],
                    down_scale: Optional[torch.Tensor], gate_up_bias: Optional[torch.Tensor],
                    down_bias: Optional[torch.Tensor], swiglu_alpha: float, swiglu_limit: float) -> torch.Tensor:
    if not runs_kernel(x):
        return moe_experts_reference(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale,
                                     down_scale, gate_up_bias, down_bias, swiglu_alpha, swiglu_limit).to(x.dtype)
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, top_k_index.shape[1]
    out = torch.empty((T, H), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    if top_k == 0 or E == 0 or I == 0:
        return out.zero_()
    idx, router = top_k_index.contiguous(), top_k_weights.contiguous()  # [T, k]: a copy only of a strided view
    x = x if x.stride(1) == 1 else x.contiguous()
    h = torch.empty((T * top_k, I), device=x.device, dtype=x.dtype)  # workspace: act(g) * u of every pair
    scaled = gate_up_scale is not None
    placeholder = provided(float32_placeholder(x.device), functools.partial(float32_placeholder, x.device))
    gate_up_scale, down_scale, gate_up_bias, down_bias = (placeholder if t is None else t.contiguous() for t in (
        gate_up_scale, down_scale, gate_up_bias, down_bias))
    swiglu = (float(swiglu_alpha), float(swiglu_limit)) if activation == "swiglu_oai" else (0.0, 0.0)
    block_n, block_k, warps = QUANT_GATE_UP_LAUNCH if scaled else GATE_UP_LAUNCH
    launch(_moe_gate_up_kernel, (T * top_k, cdiv(I, block_n)), x, idx, gate_up, gate_up_scale, gate_up_bias, h, H, I,
           E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1), ACT=activation, APPROX=x.is_cuda,
           SCALED=scaled, HAS_BIAS=gate_up_bias is not placeholder, ALPHA=swiglu[0], LIMIT=swiglu[1],
           BLOCK_N=block_n, BLOCK_K=min(block_k, triton.next_power_of_2(H)), num_warps=warps)
    block_n, block_k, warps, per_sm = QUANT_DOWN_LAUNCH if scaled else DOWN_LAUNCH
    block_k = min(block_k, triton.next_power_of_2(I))
    tiles, steps = T * cdiv(H, block_n), cdiv(I, block_k)
    splits = max(1, min(cdiv(per_sm * num_sms(x.device.index if x.is_cuda else -1), tiles), steps, DOWN_MAX_SPLITS))
    k_split = cdiv(steps, splits) * block_k
    splits = cdiv(I, k_split)
    partials = (torch.empty((splits, T, H), device=x.device, dtype=torch.float32) if splits > 1 else placeholder)
    launch(_moe_down_kernel, (T, cdiv(H, block_n), splits), h, idx, router, down, down_scale, down_bias, out,
           partials, arrival_counters(x.device, tiles), T, H, I, E, top_k, k_split, router.stride(0), down.stride(0),
           down.stride(1), out.stride(0), SCALED=scaled, HAS_BIAS=down_bias is not placeholder, SPLITS=splits,
           SUM_BATCH=min(splits, 8), BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps)
    return out


@planned
def moe_experts(x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor, gate_up: torch.Tensor,
                down: torch.Tensor, activation: str = "silu", gate_up_scale: Optional[torch.Tensor] = None,
                down_scale: Optional[torch.Tensor] = None, gate_up_bias: Optional[torch.Tensor] = None,
                down_bias: Optional[torch.Tensor] = None, swiglu_alpha: float = 1.702,
                swiglu_limit: float = 7.0) -> torch.Tensor:
    """sum_j top_k_weights[t, j] * down[e] @ (act(gate[e] @ x[t]) * (up[e] @ x[t])), e = top_k_index[t, j]: an MoE
    layer's experts for its routed tokens (the module docstring). x [T, H]; top_k_index [T, k] int32 / int64 and
    top_k_weights [T, k] float; gate_up [E, 2I, H] (each expert's gate rows, then its up rows), down [E, H, I], both
    x's dtype; activation "silu", "gelu", "gelu_tanh" or "swiglu_oai" (gpt-oss's gate: swiglu_alpha, swiglu_limit);
    optional biases gate_up_bias [E, 2I] and down_bias [E, H]. Indices outside [0, E) contribute nothing. Returns
    [T, H] in x's dtype. Quantized experts: gate_up and down as float8_e4m3fn or int8 codes with gate_up_scale
    [E, 2I] and down_scale [E, H] (fp32, a scale per output row; `quantize_experts`). Meant for decoding (few
    tokens): every (token, expert) pair reads its expert's weights."""
    _check(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale, gate_up_bias,
           down_bias, swiglu_alpha, swiglu_limit)
    return _moe_experts_op(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale,
                           gate_up_bias, down_bias, float(swiglu_alpha), float(swiglu_limit))


def quantize_experts(gate_up: torch.Tensor, down: torch.Tensor, quant: str = "fp8") -> tuple[torch.Tensor, ...]:
    """gate_up [E, 2I, H] and down [E, H, I] as codes with a scale per output row (quantize_rows_reference's:
    scale = max |row| / the format's largest code, "fp8" float8_e4m3fn, "int8" rounded half away from zero), one
    expert at a time (a float64 copy of one). Returns (gate_up codes, gate_up_scale [E, 2I], down codes, down_scale
    [E, H]), ready for moe_experts."""
    if quant not in EXPERT_QUANTS:
        raise ValueError(f"quant must be one of {', '.join(EXPERT_QUANTS)}, got {quant!r}")
    for name, w in (("gate_up", gate_up), ("down", down)):
        check_float(name, w.detach() if isinstance(w, torch.Tensor) else w)
        if w.dim() != 3:
            raise ValueError(f"{name} must be 3-D [experts, out, in], got shape {tuple(w.shape)}")
    out = []
    for w in (gate_up, down):
        codes = torch.zeros(w.shape, dtype=EXPERT_QUANTS[quant], device=w.device)
        scale = torch.ones(w.shape[:2], dtype=torch.float32, device=w.device)  # rows of no columns: nothing to scale
        for e in range(w.shape[0] if w.shape[-1] else 0):
            codes[e], row_scale = quantize_rows_reference(w[e].detach().double(), quant)
            scale[e] = row_scale[:, 0]
        out += [codes, scale]
    return tuple(out)


def moe_experts_eager(x, top_k_index, top_k_weights, gate_up, down, activation="silu", gate_up_scale=None,
                      down_scale=None, gate_up_bias=None, down_bias=None, swiglu_alpha=1.702, swiglu_limit=7.0):
    """What transformers' eager experts loop does: per expert hit, its tokens' F.linear, the activation, F.linear,
    the router weight, index_add_ (a host synchronisation for the experts hit). Quantized experts: each expert hit
    dequantized to x's dtype first."""
    act = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
           "swiglu_oai": None}[activation]

    def weight(w, scale, e):  # codes times scales in fp32, rounded once (an fp16 scale may be subnormal)
        return w[e] if scale is None else (w[e].float() * scale[e, :, None]).to(x.dtype)

    out = torch.zeros_like(x)
    mask = F.one_hot(top_k_index.long(), num_classes=gate_up.shape[0] + 1).permute(2, 1, 0)  # + 1: the sentinel E
    for e in torch.greater(mask[:-1].sum(dim=(-1, -2)), 0).nonzero():
        pos, tokens = torch.where(mask[e[0]])
        bias = [None if b is None else b[e[0]] for b in (gate_up_bias, down_bias)]
        gate, up = F.linear(x[tokens], weight(gate_up, gate_up_scale, e[0]), bias[0]).chunk(2, dim=-1)
        if act is None:  # gpt-oss's clamped gate
            gate, up = gate.clamp(max=swiglu_limit), up.clamp(-swiglu_limit, swiglu_limit)
            h = gate * torch.sigmoid(swiglu_alpha * gate) * (up + 1)
        else:
            h = act(gate) * up
        y = F.linear(h, weight(down, down_scale, e[0]), bias[1]) * top_k_weights[tokens, pos, None]
        out.index_add_(0, tokens, y.to(out.dtype))
    return out


def _grouped_mm_peer():
    """transformers' "grouped_mm" experts (tokens sorted by expert, torch._grouped_mm for both projections), on a
    stand-in module of the default layout; None where this transformers has none."""
    try:
        from transformers.integrations.moe import grouped_mm_experts_forward
    except ImportError:
        return None

    def run(x, top_k_index, top_k_weights, gate_up, down):
        inner = gate_up.shape[1] // 2
        experts = SimpleNamespace(num_experts=gate_up.shape[0], _is_expert_parallel=False, has_gate=True,
                                  has_bias=False, is_transposed=False, has_post_expert_norm=False,
                                  gate_up_proj=gate_up, down_proj=down,
                                  _apply_gate=lambda p: F.silu(p[..., :inner]) * p[..., inner:])
        return grouped_mm_experts_forward(experts, x, top_k_index, top_k_weights)
    return run


def _make_inputs(shape, dtype, device):
    """Tokens routed round-robin (token t's j-th expert: (t k + j) mod E, weights from a softmax): while T k <= E every
    pair has its own expert, as a decode step's tokens mostly do."""
    T, E, k, H, I = shape
    x = torch.randn(T, H, device=device, dtype=dtype)
    idx = (torch.arange(T * k, device=device) % E).reshape(T, k)
    weights = torch.softmax(torch.randn(T, k, device=device), dim=-1)
    gate_up = torch.randn(E, 2 * I, H, device=device, dtype=dtype) * H**-0.5
    down = torch.randn(E, H, I, device=device, dtype=dtype) * I**-0.5
    return x, idx, weights, gate_up, down


def _cost(shape, dtype, quantized: bool = False) -> Cost:
    """Each expert routed to read once (3 H I elements, one byte each and 2I + H fp32 row scales when quantized;
    min(T k, E) of them, as _make_inputs routes), x and out once; the h round trip between the kernels (2 T k I
    elements) is not the floor's."""
    T, E, k, H, I = shape
    pairs, experts = T * k, min(T * k, E)
    weights = experts * (3 * H * I + 4 * (2 * I + H)) if quantized else experts * 3 * H * I * dtype.itemsize
    return Cost(flops=6 * pairs * H * I, bytes=weights + 2 * T * H * dtype.itemsize + 12 * pairs)


def _make_quantized_inputs(shape, dtype, device, quant):
    """_make_inputs' with the experts quantized (quantize_experts): x, idx, weights, gate_up, down, their scales."""
    x, idx, weights, gate_up, down = _make_inputs(shape, dtype, device)
    gate_up, gate_up_scale, down, down_scale = quantize_experts(gate_up, down, quant)
    return x, idx, weights, gate_up, down, gate_up_scale, down_scale


def _moe_experts_quantized(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    return moe_experts(x, idx, weights, gate_up, down, gate_up_scale=gate_up_scale, down_scale=down_scale)


def _moe_experts_quantized_reference(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    return moe_experts_reference(x, idx, weights, gate_up, down, "silu", gate_up_scale, down_scale)


def _moe_experts_quantized_eager(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    """Without a kernel for the codes: the eager loop, each expert hit dequantized to x's dtype."""
    return moe_experts_eager(x, idx, weights, gate_up, down, gate_up_scale=gate_up_scale, down_scale=down_scale)


# Mixtral-8x7B (E 8, k 2, H 4096, I 14336) and Qwen3-30B-A3B (E 128, k 8, H 2048, I 768) at decode batch sizes
BENCH_CASES = tuple((T, E, k, H, I) for E, k, H, I in ((8, 2, 4096, 14336), (128, 8, 2048, 768))
                    for T in (1, 2, 4, 8, 16) if T * k <= 2 * E)

registry.register(registry.OpSpec(
    name="moe_experts", family="moe", make_inputs=_make_inputs, run=moe_experts, reference=moe_experts_reference,
    eager=moe_experts_eager, cost=_cost, cases=BENCH_CASES, peers={"grouped_mm": _grouped_mm_peer}, x_key="M",
    check_cases=((1, 4, 2, 64, 48), (3, 4, 2, 96, 40))))
for _quant in EXPERT_QUANTS:  # moe_experts_fp8, moe_experts_int8
    registry.register(registry.OpSpec(
        name=f"moe_experts_{_quant}", family="moe",
        make_inputs=functools.partial(_make_quantized_inputs, quant=_quant), run=_moe_experts_quantized,
        reference=_moe_experts_quantized_reference, eager=_moe_experts_quantized_eager,
        cost=functools.partial(_cost, quantized=True), cases=BENCH_CASES, x_key="M",
        check_cases=((1, 4, 2, 64, 48), (3, 4, 2, 96, 40))))
