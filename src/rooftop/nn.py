"""Drop-in modules over the functional ops: same constructor arguments, parameters and state_dict keys
as torch.nn's, so a model swaps them in (or loads a checkpoint) unchanged.

`forward(x, residual=None)`: with a residual, the pre-norm residual add is fused and the module
returns (norm(x + residual), x + residual), one read and one write of each. RMSNorm's `quant="fp8"|"int8"`
quantizes the normalised rows in the same pass: they come as the pair (q, scale) that Fp8Linear and fp8_linear
take (with a residual: ((q, scale), x + residual)).
"""
from __future__ import annotations

import numbers
from typing import Optional

import torch
from torch import nn

from rooftop.ops.layer_norm import layer_norm
from rooftop.ops.rms_norm import rms_norm


def _last_dim(normalized_shape) -> int:
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else tuple(normalized_shape)
    if len(shape) != 1:
        raise ValueError(f"normalized_shape must be one dimension (the last), got {shape}")
    return int(shape[0])


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm over the last dim. `offset=1.0` gives Gemma's (1 + weight) scaling;
    `eps=None` uses torch's default, the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: Optional[float] = None, elementwise_affine: bool = True,
                 device=None, dtype=None, offset: float = 0.0):
        super().__init__()
        self.normalized_shape = (_last_dim(normalized_shape),)
        self.eps = eps
        self.offset = offset
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            init = torch.zeros if offset else torch.ones  # offset + weight starts at 1
            self.weight = nn.Parameter(init(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None, quant: Optional[str] = None):
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        out = rms_norm(x, self.weight, eps, residual=residual, offset=self.offset, quant=quant)
        return (out[:2], out[2]) if quant is not None and residual is not None else out

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
                + (f", offset={self.offset}" if self.offset else ""))


class LayerNorm(nn.Module):
    """torch.nn.LayerNorm over the last dim (Welford statistics in fp32)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (_last_dim(normalized_shape),)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype))
            self.bias = nn.Parameter(torch.zeros(self.normalized_shape, device=device, dtype=dtype)) if bias else None
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        return layer_norm(x, self.weight, self.bias, self.eps, residual=residual)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def swap_norms(model: nn.Module) -> int:
    """Replace every torch.nn.RMSNorm / LayerNorm over one dim in `model` by rooftop's, keeping the
    parameters; returns how many were replaced."""
    swapped = 0
    for name, child in list(model.named_children()):
        new = None
        if isinstance(child, nn.RMSNorm) and len(child.normalized_shape) == 1:
            new = RMSNorm(child.normalized_shape, child.eps, child.elementwise_affine)
        elif isinstance(child, nn.LayerNorm) and len(child.normalized_shape) == 1:
            new = LayerNorm(child.normalized_shape, child.eps, child.elementwise_affine, child.bias is not None)
        if new is None:
            swapped += swap_norms(child)
            continue
        if child.weight is not None:
            new.weight = child.weight
        if getattr(child, "bias", None) is not None:
            new.bias = child.bias
        setattr(model, name, new)
        swapped += 1
    return swapped
