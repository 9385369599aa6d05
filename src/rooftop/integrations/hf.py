"""Patch a Hugging Face Llama-style model (Llama, Mistral, Qwen2, Gemma, ...) to run rooftop's fused ops.

Duck-typed, so it follows the architecture rather than a transformers version:
- an RMSNorm module (class name ending in "RMSNorm", a `weight` and `variance_epsilon` or `eps`) becomes
  rooftop.nn.RMSNorm with the same weight (Gemma's class: offset 1, its (1 + weight) scaling);
- an MLP with `gate_proj`, `up_proj`, `down_proj` and a SiLU or tanh-GELU `act_fn` runs
  down(swiglu(gate(x), up(x))) (geglu for GELU): the activation and the product in one pass. Where gate and up
  are both nn.Linear (or both QuantLinear of one format) they become one projection `gate_up_proj` whose packed
  output [..., 2I] the activation reads: one GEMM launch instead of two, over a wider N (the batch-1 GEMV's
  bandwidth grows with it). Their weights are then concatenated (a copy; the originals go with the old module),
  so the module's state_dict names change: `merge_gate_up=False` keeps them apart;
- an attention module (`q_proj` and `k_proj`) whose forward calls its module's NeoX-layout
  `apply_rotary_pos_emb(q, k, cos, sin)` (a `rotate_half` beside it) gets a forward of its own that
  calls rooftop.apply_rope instead: q and k rotated in one launch (Hugging Face: ten elementwise kernels).
  Only that module's forward changes (the function's global is rebound in a copy of the forward, through
  any functools.wraps decorators); anything unusual (another unsqueeze_dim, autograd, shapes the kernel
  does not take) calls the original.
Other parameters are shared, not copied; outputs match the original up to rounding. Attention itself is left
to the model's own implementation (choose `attn_implementation="sdpa"` when loading).
"""
from __future__ import annotations

import inspect
import sys
import types

import torch
from torch import nn

from rooftop.nn import RMSNorm
from rooftop.ops.activations import geglu, swiglu
from rooftop.ops.quant_matmul import QuantLinear
from rooftop.ops.rope import apply_rope


def stacked_projection(first: nn.Module, second: nn.Module) -> nn.Module | None:
    """One module computing cat([first(x), second(x)], -1): two nn.Linear of one input width, dtype and device
    (weights and biases concatenated), or two QuantLinear of one format (QuantLinear.stacked). None otherwise."""
    if type(first) is nn.Linear and type(second) is nn.Linear:
        w1, w2 = first.weight, second.weight
        if (w1.shape[1] != w2.shape[1] or w1.dtype != w2.dtype or w1.device != w2.device
                or (first.bias is None) != (second.bias is None)):
            return None
        merged = nn.Linear(w1.shape[1], w1.shape[0] + w2.shape[0], bias=first.bias is not None, device="meta")
        merged.weight = nn.Parameter(torch.cat([w1.detach(), w2.detach()]), requires_grad=w1.requires_grad)
        if first.bias is not None:
            merged.bias = nn.Parameter(torch.cat([first.bias.detach(), second.bias.detach()]),
                                       requires_grad=first.bias.requires_grad)
        return merged
    if isinstance(first, QuantLinear) and isinstance(second, QuantLinear):
        try:
            return QuantLinear.stacked(first, second)
        except ValueError:  # of different formats: kept apart
            return None
    return None


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)) with the gating fused: rooftop's swiglu or geglu (tanh). With `merge` the gate
    and up projections become one, `gate_up_proj` (where `stacked_projection` can), its output the packed
    [..., 2I] (gate half, up half) that the activation reads."""

    def __init__(self, gate_proj: nn.Module, up_proj: nn.Module, down_proj: nn.Module, activation: str,
                 merge: bool = True):
        super().__init__()
        self.gate_up_proj = stacked_projection(gate_proj, up_proj) if merge else None
        if self.gate_up_proj is None:
            self.gate_proj, self.up_proj = gate_proj, up_proj
        self.down_proj, self.activation = down_proj, activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate_up_proj is not None:
            gate, up = self.gate_up_proj(x), None
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        hidden = swiglu(gate, up) if self.activation == "silu" else geglu(gate, up, "tanh")
        return self.down_proj(hidden)

    def extra_repr(self) -> str:
        return f"activation={self.activation} (fused{', gate and up stacked' if self.gate_up_proj else ''})"


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


def _gated_mlp(module: nn.Module, merge: bool) -> GatedMLP | None:
    parts = [getattr(module, name, None) for name in ("gate_proj", "up_proj", "down_proj", "act_fn")]
    if any(p is None for p in parts) or not isinstance(parts[3], nn.Module):
        return None
    activation = _activation(parts[3])
    return GatedMLP(*parts[:3], activation, merge) if activation else None


def _fused_rotary(original):
    """Hugging Face's apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1) by rooftop.apply_rope where
    the kernel takes the call (q, k [B, H, S, D], cos/sin [S, D] or [B, S, D], no autograd), else `original`."""
    def apply_rotary_pos_emb(q, k, cos, sin, *args, **kwargs):
        plain = not args and kwargs.get("unsqueeze_dim", 1) == 1 and set(kwargs) <= {"unsqueeze_dim"}
        shapes = (q.dim() == 4 and k.dim() == 4 and cos.shape == sin.shape and cos.dim() in (2, 3)
                  and cos.shape[-1] == q.shape[-1] and cos.shape[-2] == q.shape[2])
        grads = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, cos, sin))
        if plain and shapes and not grads and q.dtype == k.dtype and q.stride(-1) == 1 and k.stride(-1) == 1:
            return apply_rope(q, k, cos, sin)
        return original(q, k, cos, sin, *args, **kwargs)
    return apply_rotary_pos_emb


def _rebound(fn, target, replacement):
    """`fn` with `target` replaced by `replacement`: fn itself, or a functools.wraps wrapper (any depth)
    rebuilt around the replacement through its closure cell. None where the structure is not that."""
    if fn is target:
        return replacement
    inner = getattr(fn, "__wrapped__", None)
    if inner is None or not isinstance(fn, types.FunctionType) or not fn.__closure__:
        return None
    new_inner = _rebound(inner, target, replacement)
    if new_inner is None or not any(c.cell_contents is inner for c in fn.__closure__):
        return None
    cells = tuple(types.CellType(new_inner) if c.cell_contents is inner else c for c in fn.__closure__)
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, cells)
    new.__kwdefaults__, new.__wrapped__ = fn.__kwdefaults__, new_inner
    return new


def _fused_rope_forward(module: nn.Module):
    """A bound forward for an attention module that calls rooftop.apply_rope for its rotary embedding,
    or None when the module is not of that kind."""
    if not (hasattr(module, "q_proj") and hasattr(module, "k_proj")):
        return None
    forward = type(module).forward
    inner = inspect.unwrap(forward)
    home = sys.modules.get(type(module).__module__)
    rope = inner.__globals__.get("apply_rotary_pos_emb") if isinstance(inner, types.FunctionType) else None
    if rope is None or rope is not getattr(home, "apply_rotary_pos_emb", None) or \
            not callable(getattr(home, "rotate_half", None)) or \
            list(inspect.signature(rope).parameters)[:4] != ["q", "k", "cos", "sin"]:
        return None
    patched = types.FunctionType(inner.__code__, {**inner.__globals__, "apply_rotary_pos_emb": _fused_rotary(rope)},
                                 inner.__name__, inner.__defaults__, inner.__closure__)
    patched.__kwdefaults__ = inner.__kwdefaults__
    new = _rebound(forward, inner, patched)
    return types.MethodType(new, module) if new is not None else None


def patch_model(model: nn.Module, merge_gate_up: bool = True) -> dict[str, int]:
    """Swap in rooftop's fused modules in place; returns how many of each were replaced. merge_gate_up: an MLP's
    gate and up projections become one (`GatedMLP`), where they can."""
    counts = {"rms_norm": 0, "gated_mlp": 0, "rope": 0}
    forward = _fused_rope_forward(model)
    if forward is not None and "forward" not in vars(model):
        model.forward = forward
        counts["rope"] += 1
    for name, child in list(model.named_children()):
        new = _rms_norm(child)
        kind = "rms_norm"
        if new is None:
            new, kind = _gated_mlp(child, merge_gate_up), "gated_mlp"
        if new is None:
            for key, n in patch_model(child, merge_gate_up).items():
                counts[key] += n
            continue
        setattr(model, name, new)
        counts[kind] += 1
    return counts
