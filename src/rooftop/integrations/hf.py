"""Patch a Hugging Face Llama-style model (Llama, Mistral, Qwen2, Gemma, ...) to run rooftop's fused ops.

Duck-typed, so it follows the architecture rather than a transformers version:
- an RMSNorm module (class name ending in "RMSNorm", a `weight` and `variance_epsilon` or `eps`) becomes
  rooftop.nn.RMSNorm with the same weight (Gemma's class: offset 1, its (1 + weight) scaling);
- an MLP with `gate_proj`, `up_proj`, `down_proj` and a SiLU or tanh-GELU `act_fn` runs
  down(swiglu(gate(x), up(x))) (geglu for GELU): the activation and the product in one pass.
Parameters are shared, not copied; outputs match the original up to rounding. Attention is left to the
model's own implementation (choose `attn_implementation="sdpa"` when loading).
"""
from __future__ import annotations

import torch
from torch import nn

from rooftop.nn import RMSNorm
from rooftop.ops.activations import geglu, swiglu


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)) with the gating fused: rooftop's swiglu or geglu (tanh)."""

    def __init__(self, gate_proj: nn.Module, up_proj: nn.Module, down_proj: nn.Module, activation: str):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = gate_proj, up_proj, down_proj
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_proj(x), self.up_proj(x)
        hidden = swiglu(gate, up) if self.activation == "silu" else geglu(gate, up, "tanh")
        return self.down_proj(hidden)

    def extra_repr(self) -> str:
        return f"activation={self.activation} (fused)"


def _activation(act: nn.Module) -> str | None:
    """'silu' or 'gelu_tanh' when `act` is one of those (torch's or transformers' classes), else None."""
    if isinstance(act, nn.SiLU) or type(act).__name__ == "SiLUActivation":
        return "silu"
    if isinstance(act, nn.GELU) and act.approximate == "tanh":
        return "gelu_tanh"
    if type(act).__name__ in ("PytorchGELUTanh", "GELUTanh", "NewGELUActivation", "GELUPytorchTanh"):
        return "gelu_tanh"
    return None


def _rms_norm(module: nn.Module) -> RMSNorm | None:
    if not type(module).__name__.endswith("RMSNorm"):
        return None
    weight = getattr(module, "weight", None)
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or eps is None:
        return None
    offset = 1.0 if type(module).__name__.startswith("Gemma") else 0.0  # Gemma scales by (1 + weight)
    new = RMSNorm(weight.shape[0], eps=eps, offset=offset)
    new.weight = weight if isinstance(weight, nn.Parameter) else nn.Parameter(weight, requires_grad=False)
    return new


def _gated_mlp(module: nn.Module) -> GatedMLP | None:
    parts = [getattr(module, name, None) for name in ("gate_proj", "up_proj", "down_proj", "act_fn")]
    if any(p is None for p in parts) or not isinstance(parts[3], nn.Module):
        return None
    activation = _activation(parts[3])
    return GatedMLP(*parts[:3], activation) if activation else None


def patch_model(model: nn.Module) -> dict[str, int]:
    """Swap in rooftop's fused modules in place; returns how many of each were replaced."""
    counts = {"rms_norm": 0, "gated_mlp": 0}
    for name, child in list(model.named_children()):
        new = _rms_norm(child)
        kind = "rms_norm"
        if new is None:
            new, kind = _gated_mlp(child), "gated_mlp"
        if new is None:
            for key, n in patch_model(child).items():
                counts[key] += n
            continue
        setattr(model, name, new)
        counts[kind] += 1
    return counts
