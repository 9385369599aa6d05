r"""RMSNorm, optionally fused with the residual add of a pre-norm transformer block.

For a row x of width N, weight w and eps:

    rms_norm(x)_i = x_i / sqrt(mean_j(x_j^2) + eps) * w_i

With a residual (the pre-norm residual stream), r = x + residual is formed first, rounded to the
input dtype (it is the new residual stream, stored as such), and normalised:

    r = x + residual;   y = rms_norm(r)        -> returns (y, r)

`fused_add_rms_norm_(x, residual, w, eps)` does the same in place, with vLLM's semantics:
residual <- x + residual, x <- rms_norm(residual) * w. Statistics in fp32 for every dtype.

Which path runs (N = row width in elements):
- N <= ONCHIP_MAX: whole rows in registers, BLOCK_M rows a program. Traffic: read x (and residual)
  once, write y (and r) once, read w once per program (it stays in L2).
- N > ONCHIP_MAX: persistent, one row at a time per program. Pass 1 reads x (and residual), writes
  r, sums r^2; pass 2 walks the row back to front (the tiles last touched are still in L2), reads r
  (or x) again and writes y. The re-read comes from L2 while (programs in flight * row bytes) fits.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (as_rows, cdiv, check_float, check_same_device, launch, num_sms, onchip_config,
                                  runs_kernel, torch_op)
from rooftop.roofline import Cost

ONCHIP_MAX = 32768  # widest row kept in registers (elements)
# Launch parameters, chosen by measurement on the H200 (benchmarks/tune_rowops.py, NOTES.md).
ONCHIP_ELEMS_PER_THREAD = 16
ONCHIP_BLOCK_ELEMS = 2048
PROGRAMS_PER_SM = 4


def looped_config(N: int) -> tuple[int, int]:
    """(TILE, num_warps) of the looped path."""
    return 16384, 32

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _rms_norm_onchip_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride, r_stride,
                            eps, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Reads x (+ residual) once and writes y (+ r) once: (2 or 4) * BLOCK_M * N * itemsize bytes.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    x = tl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        res = tl.load(res_ptr + rows[:, None] * res_stride + cols[None, :], mask=mask, other=0.0)
        r = (x + res.to(tl.float32)).to(r_ptr.dtype.element_ty)  # the new residual stream, as stored
        tl.store(r_ptr + rows[:, None] * r_stride + cols[None, :], r, mask=mask)
        x = r.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    y = x * rstd[:, None]
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_looped_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride, r_stride,
                            eps, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr, TILE: tl.constexpr,
                            X_POLICY: tl.constexpr):
    # Per row: pass 1 reads x (+ residual), writes r; pass 2 re-reads r (or x), mostly from L2,
    # and writes y. Persistent: program p takes rows p, p + G, ...
    cols = tl.arange(0, TILE)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * x_stride
        y_row = y_ptr + tl.cast(row, tl.int64) * y_stride
        if HAS_RESIDUAL:
            res_row = res_ptr + tl.cast(row, tl.int64) * res_stride
            src_row = r_ptr + tl.cast(row, tl.int64) * r_stride  # pass 2 reads the stored new residual
        else:
            src_row = x_row
        # pass 1, the next tile's loads in flight while the current one is summed
        sum_sq = tl.zeros([TILE], tl.float32)
        x_next = tl.load(x_row + cols, mask=cols < N, other=0.0, eviction_policy=X_POLICY)
        if HAS_RESIDUAL:
            res_next = tl.load(res_row + cols, mask=cols < N, other=0.0, eviction_policy="evict_first")
        for off in range(0, N, TILE):
            mask = off + cols < N
            r = x_next.to(tl.float32)
            nxt = off + TILE + cols
            x_next = tl.load(x_row + nxt, mask=nxt < N, other=0.0, eviction_policy=X_POLICY)
            if HAS_RESIDUAL:
                r = (r + res_next.to(tl.float32)).to(r_ptr.dtype.element_ty)  # the new residual, as stored
                res_next = tl.load(res_row + nxt, mask=nxt < N, other=0.0, eviction_policy="evict_first")
                tl.store(src_row + off + cols, r, mask=mask, eviction_policy="evict_last")
                r = r.to(tl.float32)
            sum_sq += r * r
        rstd = tl.rsqrt(tl.sum(sum_sq, axis=0) / N + eps)
        # pass 2, back to front: the tiles touched last in pass 1 are the likeliest still in L2
        off = (tl.cdiv(N, TILE) - 1) * TILE
        r_next = tl.load(src_row + off + cols, mask=off + cols < N, other=0.0, eviction_policy="evict_first")
        while off >= 0:
            r = r_next.to(tl.float32)
            prev = off - TILE
            r_next = tl.load(src_row + prev + cols, mask=(prev + cols >= 0) & (prev + cols < N), other=0.0,
                             eviction_policy="evict_first")
            y = r * rstd
            if HAS_WEIGHT:
                y = y * tl.load(w_ptr + off + cols, mask=off + cols < N, other=0.0,
                                eviction_policy="evict_last").to(tl.float32)
            tl.store(y_row + off + cols, y.to(y_ptr.dtype.element_ty), mask=off + cols < N)
            off = prev


def rms_norm_rows(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
                  y: torch.Tensor, r: Optional[torch.Tensor], eps: float) -> None:
    """RMSNorm of the [M, N] row views; with `residual`, r <- x + residual first and y <- norm(r).
    Every view has unit column stride; y may alias x and r may alias residual (the in-place op)."""
    M, N = x.shape
    if M == 0 or N == 0:
        return
    has_res = residual is not None
    args = (x, residual if has_res else x, weight if weight is not None else x, y, r if has_res else y, M, N,
            x.stride(0), residual.stride(0) if has_res else 0, y.stride(0), r.stride(0) if has_res else 0, eps)
    if N <= ONCHIP_MAX:
        block_m, block_n, warps = onchip_config(M, N, ONCHIP_ELEMS_PER_THREAD, ONCHIP_BLOCK_ELEMS)
        launch(_rms_norm_onchip_kernel, (cdiv(M, block_m),), *args, HAS_RESIDUAL=has_res,
               HAS_WEIGHT=weight is not None, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps)
        return
    programs = min(M, PROGRAMS_PER_SM * num_sms(x.device.index if x.is_cuda else -1))
    tile, warps = looped_config(N)
    # without a residual pass 2 re-reads x: ask L2 to keep it; with one, x is not read again
    launch(_rms_norm_looped_kernel, (programs,), *args, HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None,
           TILE=tile, X_POLICY="evict_first" if has_res else "evict_last", num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _check(x, residual, weight, eps) -> None:
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if residual is not None:
        check_float("residual", residual)
        check_same_device("residual", residual, "x", x)
        if residual.shape != x.shape:
            raise ValueError(f"residual has shape {tuple(residual.shape)} but x has {tuple(x.shape)}")
        if residual.dtype != x.dtype:
            raise TypeError(f"residual has dtype {residual.dtype} but x has {x.dtype}")
    if weight is not None:
        check_float("weight", weight)
        check_same_device("weight", weight, "x", x)
        if weight.shape != (x.shape[-1],):
            raise ValueError(f"weight must have shape ({x.shape[-1]},) to match x's last dim, got {tuple(weight.shape)}")
        if weight.stride(0) != 1 and weight.numel() > 1:
            raise ValueError("weight must be contiguous")
    if not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"eps must be a non-negative number, got {eps!r}")


def _rms_fake(x, weight, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("rms_norm", fake=_rms_fake)
def _rms_norm_op(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    if not runs_kernel(x):
        return rms_norm_reference(x, weight, eps).to(x.dtype)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if x.numel():
        rms_norm_rows(as_rows(x), None, weight, as_rows(y), None, eps)
    return y


def _add_rms_fake(x, residual, weight, eps):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format))


@torch_op("add_rms_norm", fake=_add_rms_fake)
def _add_rms_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                     eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    if not runs_kernel(x):
        y, r = add_rms_norm_reference(x, residual, weight, eps)
        return y.to(x.dtype), r.to(x.dtype)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    r = torch.empty_like(x, memory_format=torch.contiguous_format)
    if x.numel():
        rms_norm_rows(as_rows(x), as_rows(residual), weight, as_rows(y), as_rows(r), eps)
    return y, r


@torch_op("fused_add_rms_norm_", mutates_args=("x", "residual"))
def _fused_add_rms_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                           eps: float) -> None:
    if not runs_kernel(x):
        y, r = add_rms_norm_reference(x, residual, weight, eps)
        residual.copy_(r)
        x.copy_(y)
        return
    if x.numel():
        x_rows, res_rows = as_rows(x), as_rows(residual)
        if x_rows.data_ptr() != x.data_ptr() or res_rows.data_ptr() != residual.data_ptr() or \
                x_rows.stride(-1) != 1 or res_rows.stride(-1) != 1:
            raise ValueError("fused_add_rms_norm_ works in place: x and residual must be viewable as rows "
                             "of unit column stride")
        rms_norm_rows(x_rows, res_rows, weight, x_rows, res_rows, eps)


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
             residual: Optional[torch.Tensor] = None):
    """RMSNorm over the last dim: y = x / sqrt(mean(x^2) + eps) * weight (weight None: no scale).
    With `residual`, returns (rms_norm(x + residual), x + residual) from one read of each input."""
    _check(x, residual, weight, eps)
    if residual is None:
        return _rms_norm_op(x, weight, float(eps))
    return _add_rms_norm_op(x, residual, weight, float(eps))


def fused_add_rms_norm_(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                        eps: float = 1e-6) -> None:
    """In place, vLLM's semantics: residual <- x + residual; x <- rms_norm(residual) * weight."""
    if residual is None:
        raise ValueError("residual is required for fused_add_rms_norm_")
    _check(x, residual, weight, eps)
    _fused_add_rms_norm_op(x, residual, weight, float(eps))


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def rms_norm_reference(x, weight, eps=1e-6):
    """The same maths in float64."""
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def add_rms_norm_reference(x, residual, weight, eps=1e-6):
    r = x.double() + residual.double()
    return rms_norm_reference(r, weight, eps), r


def add_rms_norm_eager(x, residual, weight, eps=1e-6):
    """As Hugging Face's Llama writes it (residual add, then LlamaRMSNorm)."""
    r = x + residual
    rf = r.float()
    y = rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * y.to(x.dtype), r


def rms_norm_eager(x, weight, eps=1e-6):
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _cost(tensors_per_element: int):
    def cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
        n = math.prod(shape)
        # square, sum, scale, weight: ~4 FLOPs per element; weight read once
        return Cost(flops=4 * n, bytes=tensors_per_element * n * dtype.itemsize + shape[-1] * dtype.itemsize)
    return cost


def _make_rms(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=dtype), torch.rand(shape[-1], device=device, dtype=dtype) + 0.5


def _make_add_rms(shape, dtype, device):
    x, w = _make_rms(shape, dtype, device)
    return x, torch.randn(shape, device=device, dtype=dtype), w


def _liger_add_rms():
    try:
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    except ImportError:
        return None
    return lambda x, res, w: LigerFusedAddRMSNormFunction.apply(x, res, w, 1e-6, 0.0, "llama", False)


def _liger_rms():
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError:
        return None
    return lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6)


registry.register(registry.OpSpec(
    name="add_rms_norm", family="rms_norm", make_inputs=_make_add_rms,
    run=lambda x, res, w: rms_norm(x, w, 1e-6, residual=res),
    reference=lambda x, res, w: add_rms_norm_reference(x, res, w, 1e-6), eager=add_rms_norm_eager,
    cost=_cost(4), cases=registry.row_sweep(), peers={"liger": _liger_add_rms}))
registry.register(registry.OpSpec(
    name="rms_norm", family="rms_norm", make_inputs=_make_rms, run=lambda x, w: rms_norm(x, w, 1e-6),
    reference=lambda x, w: rms_norm_reference(x, w, 1e-6), eager=rms_norm_eager,
    cost=_cost(2), cases=registry.row_sweep(), peers={"liger": _liger_rms}))
