"""Patch a Hugging Face Llama-style model (Llama, Mistral, Qwen2/3, Gemma, Phi-3, ...) to run rooftop's fused ops.

Duck-typed, so it follows the architecture rather than a transformers version:
- an RMSNorm module (class name ending in "RMSNorm", a `weight` and `variance_epsilon` or `eps`) becomes
  rooftop.nn.RMSNorm with the same weight, scaling by weight or by 1 + weight (offset 1: Gemma's, Qwen3-Next's,
  Qwen3.5's, ...) as the module does on a random row of its width (on the meta device: on a CPU copy with random
  weights); a module that gives neither output (a bias, say) is kept. A LayerNorm (torch's over one dim, or a model's
  own class named "...LayerNorm" with a `weight`, an optional `bias` and `eps` or `variance_epsilon`: Cohere's)
  becomes rooftop.nn.LayerNorm where it gives the module's output the same way;
- an MLP with `gate_proj`, `up_proj`, `down_proj` and a SiLU or tanh-GELU `act_fn` runs down(swiglu(gate(x), up(x)))
  (geglu for GELU): the activation and the product in one pass. Where gate and up are both nn.Linear (or both
  QuantLinear of one format, or both Fp8Linear) they become one projection `gate_up_proj` whose packed output [..., 2I]
  the activation reads: one GEMM launch instead of two, over a wider N (the batch-1 GEMV's bandwidth grows with it).
  Their weights are then concatenated (a copy; the originals go with the old module), so the module's state_dict names
  change: `merge_gate_up=False` keeps them apart. Where the down projection is an Fp8Linear, the activation quantizes
  its output rows for it (swiglu(..., quant="fp8")). An MLP whose `gate_up_proj` gives the packed [..., 2I] already
  (Phi-3, GLM; `activation_fn` or `act_fn`) runs the same GatedMLP. Either is swapped only where the GatedMLP gives the
  module's output on a random row of its weights (which half is the gate, an activation sparsity as Gemma-3n's: the
  forward's choices; on the meta device, nothing to try it on, neither is);
- an attention module (`q_proj`, `k_proj`, `v_proj`, or a `qkv_proj` of its own; other projections where its forward
  takes a cache and picks one of transformers' attention functions, causal: GPT-NeoX's, GPT-2's) whose forward calls its
  module's `apply_rotary_pos_emb(q, k, cos, sin)` (a `rotate_half` beside it) gets a forward of its own that calls
  rooftop.apply_rope instead: q and k rotated in one launch (Hugging Face: ten elementwise kernels); a partial rotary
  (Phi-3's: cos / sin narrower than the head, the rest passed through) too where the function does it. How the function
  rotates is tried on small CPU tensors at patch time (_rope_form): NeoX halves (Llama), GPT-J pairs with its cos / sin
  halves repeated (GLM) or each value twice in a row (Cohere, Helium, Ernie 4.5: their every other column goes to the
  kernel, a view); a function that is none of these keeps its own. Only that module's forward changes (the function's
  global is rebound in a copy of the forward, through any functools.wraps decorators); anything unusual (another
  unsqueeze_dim, autograd, shapes the kernel does not take) calls the original. Where its forward calls self.q_proj(x),
  self.k_proj(x) and self.v_proj(x) on one x, the three become one projection `qkv_proj` (as gate and up;
  `merge_qkv=False` keeps them), split into views: one GEMM launch instead of three;
- a mixture-of-experts layer's experts (transformers' `...Experts`: 3-D `gate_up_proj` [E, 2I, H] and `down_proj`
  [E, H, I] parameters, a SiLU or tanh-GELU `act_fn`, forward(hidden_states, top_k_index, top_k_weights): Mixtral,
  Qwen2/3-MoE, OLMoE, Granite-MoE, GLM-4-MoE, Ernie-4.5-MoE, HunYuan-MoE, MiniMax) become `MoEExperts`:
  rooftop.moe_experts for every call it takes (decoding and short prefills: every routed expert read once, no host
  synchronisation, where transformers' loop synchronises to find the experts hit; long prefills: its sorted path, a
  grouped GEMM with the gate, biases and router weights fused), the module's own forward for the rest (autograd, an
  autocast dtype, a CPU). Swapped where the module has no other parameter (a bias), no gate of its own (`_apply_gate`:
  a clamp) and transformers' default layout flags, and gives the module's output on random tokens routed to random
  experts (a transposed or interleaved layout fails that). gpt-oss's experts (transposed, gate and up interleaved,
  biases, a clamped gate) are re-laid once at patch time into a MoEExperts of their own (a copy; for the calls the
  kernels do not take, the eager loop on it), checked the same way, on tokens large enough to clamp too.
  quantize_model(bits="fp8", 8 or 4) then makes each a `QuantMoEExperts` (fp8 or int8 codes, a scale per output row;
  int4 codes, a scale per group);
- a decoder layer whose forward reads `h = r + h; r = h; h = self.<norm>(h)` (transformers' Llama, Mistral, Qwen2: the
  residual add before the post-attention norm; Phi-3's `r + self.<dropout>(h)` where its p is 0), the norm now rooftop's
  RMSNorm or LayerNorm (Starcoder2's), computes `h, r = self.<norm>(h, residual=r)`: the add in the norm's kernel
  (vLLM's fused_add_rms_norm). Where the statement after it is `h = self.mlp(h)` and that MLP's gate and up are
  Fp8Linear, the norm quantizes its rows for them in the same kernel (rms_norm(..., quant="fp8")). The forwards are
  rewritten at their source (Python's ast: the statements of that pattern, nothing else; compiled with the original's
  globals and file name, so tracebacks point at its lines); a forward whose source is not at hand, that closes over
  names, or that does not hold the pattern is left as it is.
- that attention forward also sees transformers' ALL_ATTENTION_FUNCTIONS as an instance of its own class (its global
  rebound the same way) whose "sdpa" function answers a decode step by rooftop.decode_attention: one query a sequence
  over the cache's keys (a StaticCache's whole [B, Hkv, max_len, D] tensors), the boolean mask transformers builds
  (padding, windows) read as a key mask, each sequence's keys read up to its last unmasked one (lengths computed on the
  device once a step, from the mask the layers share), where SDPA reads the whole static cache under the mask. Its
  prefill goes to rooftop.attention (`prefill_attention`; by default for 16-bit heads of 64, 128 or 256 on sm_90 GPUs,
  where rooftop.attention ran 1.3-2.2x SDPA's flash backend, torch's first choice, from S = 512 on the H200) where that
  computes what SDPA would: causal (keys cut to the queries over an empty StaticCache, as transformers does) or dense
  without a mask, or a boolean mask causal within a window for every sequence (one host sync a mask and forward to
  read it); a left-padded batch's mask (generate()'s), causal within a window past each sequence's padding, to
  rooftop.attention_varlen over each sequence's tokens past its padding (gathered and scattered back; the padding's
  own rows zeros). Float masks, other padding, soft-capping, sinks, head masks, position biases, dropout, autograd
  and asked-for weights go to SDPA as before. gpt-oss's
  eager attention (its sinks, its additive mask: no SDPA for it in transformers) answers its decode steps the same way,
  the sinks in the kernel's softmax (decode_attention(..., sinks=)), and its prefill by rooftop.attention with the
  sinks where the mask is causal within the layer's window for every sequence (left padding: attention_varlen; one
  host sync a mask and forward to read it; `prefill_attention=False` keeps it eager): the eager function
  materialises [B, Hq, Sq, Sk + 1] scores a layer. Gemma 2's eager attention (soft-capped scores: no SDPA for it
  either; the copies of that function in Gemma 3, 3n, VaultGemma and others where loaded eager) is taken the same
  way, its cap in the kernels
  (softcap=); both only where the function's code is transformers' own (_same_code), and not while the config asks
  for attention weights. On by
  default (`decode_attention=False` keeps SDPA): in an int4 Llama-3-8B-shaped model decoding over a static cache of
  4096, 1123 tokens/s against 608 with SDPA (H200; journal item 196);
- that attention forward's `cache.update(k, v, self.layer_idx, ...)` (the argument named cache, past_key_value(s) or
  layer_past) goes to rooftop.append_kv where the layer is transformers' StaticLayer as it has been read
  (_known_static_classes; its cumulative_length a 0-d device tensor, the rows appended at it): one kernel for the
  arange, add and two index_copy_ kernels of its update; any other cache, layer or version updates as before. Where the
  RoPE statement comes before that update (nothing between reading k), the two are one kernel,
  rooftop.apply_rope_append_kv: q rotated, the rotated k and v written into the cache (`rope_append=False` keeps them
  apart). With kv_cache_dtype="fp8" (and both of the above on) each such StaticLayer holds fp8 codes
  (torch.float8_e4m3fn, at per-layer scales: 1.0 as vLLM's "fp8" cache by default, given, or calibrated from the first
  rows, patch_model's kv_scales) from its first update on: that update (the prefill's, transformers' own, where it
  initialises the layer) returns its 16-bit rows, then the layer's tensors become codes (quantize_kv; a layer
  initialised ahead becomes codes at once); later updates append codes (rooftop.append_kv, or the RoPE kernel above) and
  decode steps read them (rooftop.decode_attention over half the bytes); a call that reads the cache otherwise gets a
  16-bit copy of it: a prefill over cached rows, or any prefill after the cache's reset() (the codes stay, zeroed),
  which thus reads its own rows as codes where the first prefill read them in 16 bits (the logits differ by fp8's
  rounding). Any other layer (a sliding window's, heads past 512, a DynamicCache's, one whose forward reads the cache's
  rows outside its attention call) keeps its cache in the model's dtype, with a warning saying why.
Other parameters are shared, not copied; outputs match the original up to rounding. Prefill attention goes through the
model's own implementation (choose `attn_implementation="sdpa"` when loading), routed as above.
"""
from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import math
import sys
import textwrap
import types
import warnings
import weakref
from typing import NamedTuple

import torch
from torch import nn

from rooftop.nn import LayerNorm, RMSNorm
from rooftop.ops._support import FLOAT_DTYPES, apply_keeping_dtypes, check_fp8_device, is_sm90, runs_kernel
from rooftop.ops.activations import geglu, swiglu
from rooftop.ops.attention import FP8_KV, MAX_HEAD_DIM, SOFTCAP_BOUNDS, attention, attention_varlen
from rooftop.ops.decode_attention import (DECODE_MAX_HEAD_DIM, append_kv, check_fp8_scale, decode_attention,
                                          key_mask_bounds, quantize_kv)
from rooftop.ops.matmul import Fp8Linear
from rooftop.ops.moe import moe_experts, moe_experts_eager, quantize_experts
from rooftop.ops.quant_matmul import QuantLinear
from rooftop.ops.rope import apply_rope, apply_rope_append_kv, rope_reference


def stacked_projection(*parts: nn.Module) -> nn.Module | None:
    """One module computing cat([p(x) for p in parts], -1): nn.Linear of one input width, dtype and device (weights
    and biases concatenated), QuantLinear of one format (QuantLinear.stacked) or Fp8Linear (Fp8Linear.stacked). None
    otherwise."""
    if parts and all(type(p) is nn.Linear for p in parts):
        first = parts[0].weight
        if any(p.weight.shape[1] != first.shape[1] or p.weight.dtype != first.dtype or p.weight.device != first.device
               for p in parts) or len({p.bias is None for p in parts}) > 1:
            return None
        merged = nn.Linear(first.shape[1], sum(p.weight.shape[0] for p in parts), bias=parts[0].bias is not None,
                           device="meta")
        merged.weight = nn.Parameter(torch.cat([p.weight.detach() for p in parts]), requires_grad=first.requires_grad)
        if parts[0].bias is not None:
            merged.bias = nn.Parameter(torch.cat([p.bias.detach() for p in parts]),
                                       requires_grad=parts[0].bias.requires_grad)
        return merged
    for kind in (QuantLinear, Fp8Linear):
        if parts and all(isinstance(p, kind) for p in parts):
            try:
                return kind.stacked(*parts)
            except ValueError:  # of different formats: kept apart
                return None
    return None


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)) with the gating fused: rooftop's swiglu or geglu (tanh). With `merge` the gate
    and up projections become one, `gate_up_proj` (where `stacked_projection` can), its output the packed
    [..., 2I] (gate half, up half) that the activation reads. Where the down projection is an Fp8Linear
    (quantize_model(model, "fp8")) the activation also quantizes its rows for it: one kernel, 1 byte an element out."""

    def __init__(self, gate_proj: nn.Module, up_proj: nn.Module | None, down_proj: nn.Module, activation: str,
                 merge: bool = True):
        """up_proj None: gate_proj is already the packed projection (Phi-3's gate_up_proj)."""
        super().__init__()
        self.gate_up_proj = gate_proj if up_proj is None else stacked_projection(gate_proj, up_proj) if merge else None
        if self.gate_up_proj is None:
            self.gate_proj, self.up_proj = gate_proj, up_proj
        self.down_proj, self.activation = down_proj, activation

    @property
    def input_quant(self) -> str | None:
        """"fp8" where the input projections are Fp8Linear (quantize_model(model, "fp8")): the norm ahead may hand
        them its rows quantized (the (q, scale) pair of rooftop.nn.RMSNorm(..., quant="fp8")); else None."""
        first = (self.gate_up_proj,) if self.gate_up_proj is not None else (self.gate_proj, self.up_proj)
        return "fp8" if all(isinstance(p, Fp8Linear) for p in first) else None

    def forward(self, x) -> torch.Tensor:
        """x: [..., hidden], or the (q, scale) pair of rows quantized for Fp8Linear input projections."""
        if self.gate_up_proj is not None:
            gate, up = self.gate_up_proj(x), None
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        quant = "fp8" if isinstance(self.down_proj, Fp8Linear) else None
        hidden = swiglu(gate, up, quant=quant) if self.activation == "silu" else geglu(gate, up, "tanh", quant=quant)
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


# How far a swapped module's output may be from the module's on the probe row (relative L2): a norm's rounding to bf16
# is ~4e-3; an MLP's to fp8 (its activation quantized from fp32 or from bf16) up to ~2e-2. A different computation
# (another scaling, mean subtraction, the halves swapped, a sparse gate) is off by 0.1 or more.
NORM_TOLERANCE = 2e-2
MLP_TOLERANCE = 5e-2


def _rms_norm(module: nn.Module) -> RMSNorm | None:
    """rooftop's RMSNorm for a module named "...RMSNorm" with a 1-D `weight` and `variance_epsilon` or `eps`, scaling
    by weight or by 1 + weight, whichever gives the module's output on a random row (the closer, within
    NORM_TOLERANCE; on the meta device, tried on a CPU copy with random weights); None where neither does."""
    if isinstance(module, RMSNorm) or not type(module).__name__.endswith("RMSNorm"):
        return None
    weight = getattr(module, "weight", None)
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or eps is None:
        return None
    probe = _cpu_copy(module) if weight.device.type == "meta" else module
    if probe is None:
        return None
    errors = {offset: _output_error(probe, _rms_norm_like(probe.weight, eps, offset), probe.weight)
              for offset in (0.0, 1.0)}
    offset = min(errors, key=errors.get)
    return _rms_norm_like(weight, eps, offset) if errors[offset] <= NORM_TOLERANCE else None


def _rms_norm_like(weight: torch.Tensor, eps: float, offset: float) -> RMSNorm:
    new = RMSNorm(weight.shape[0], eps=eps, offset=offset, device="meta")
    new.weight = _parameter(weight)
    return new


def _parameter(t: torch.Tensor) -> nn.Parameter:
    """`t` itself where it is a parameter (shared, not copied), else a parameter over its storage."""
    return t if isinstance(t, nn.Parameter) else nn.Parameter(t, requires_grad=False)


def _layer_norm(module: nn.Module) -> LayerNorm | None:
    """rooftop's LayerNorm for torch's nn.LayerNorm over one dim, or for a class named "...LayerNorm" with a 1-D
    `weight` (a `bias` of its shape or none) and `eps` or `variance_epsilon` (Cohere's), where rooftop's gives the
    module's output on a random row (on the meta device, tried on a CPU copy with random weights)."""
    if isinstance(module, LayerNorm) or not type(module).__name__.endswith("LayerNorm"):
        return None
    weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
    eps = getattr(module, "eps", getattr(module, "variance_epsilon", None))
    if (not isinstance(weight, torch.Tensor) or weight.dim() != 1 or not isinstance(eps, float)
            or not (bias is None or (isinstance(bias, torch.Tensor) and bias.shape == weight.shape))
            or (isinstance(module, nn.LayerNorm) and len(module.normalized_shape) != 1)):
        return None
    probe = _cpu_copy(module) if weight.device.type == "meta" else module
    if probe is None or _output_error(probe, _layer_norm_like(probe.weight, getattr(probe, "bias", None), eps),
                                      probe.weight) > NORM_TOLERANCE:
        return None
    return _layer_norm_like(weight, bias, eps)


def _layer_norm_like(weight: torch.Tensor, bias: torch.Tensor | None, eps: float) -> LayerNorm:
    new = LayerNorm(weight.shape[0], eps=eps, bias=bias is not None, device="meta")
    new.weight, new.bias = _parameter(weight), None if bias is None else _parameter(bias)
    return new


def _cpu_copy(module: nn.Module) -> nn.Module | None:
    """A copy of a (small) module on the meta device made on the CPU, its floating parameters and buffers drawn from
    U(-0.5, 1.5) (seeded: the caller's random stream untouched), to try a swap on; None where it cannot be made."""
    try:
        copied = copy.deepcopy(module).to_empty(device="cpu")
    except Exception:  # any failure: nothing to try the swap on
        return None
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in (*copied.parameters(), *copied.buffers()):
            if t.is_floating_point():
                t.copy_(torch.rand(t.shape, generator=generator) * 2 - 0.5)
    return copied


def _output_error(module: nn.Module, new: nn.Module, like: torch.Tensor, width: int | None = None) -> float:
    """`new`'s output against `module`'s (relative L2) on one random row of `width` (default: like's last dim) with a
    mean of 1 (mean-subtracting and scaling-only norms differ on it), on `like`'s device, in `like`'s dtype where that
    is a 16- or 32-bit float (else bf16); inf where either fails on it or their outputs differ in shape. One row: a
    GEMM a quantized projection tunes for it is the decode step's (batch 1) shape. The caller's random stream is
    left as it was."""
    dtype = like.dtype if like.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.bfloat16
    generator = torch.Generator(like.device).manual_seed(0)
    x = torch.randn(1, width or like.shape[-1], device=like.device, generator=generator).add_(1.0).to(dtype)
    try:
        with torch.no_grad():
            want, got = module(x), new(x)
    except Exception:  # a module that takes no such row (another signature, another layout): no swap
        return math.inf
    return _relative_error(want, got)


def _relative_error(want, got) -> float:
    """||got - want|| / ||want|| in float64; inf where either is not a tensor or their shapes differ (0 for two
    zero outputs)."""
    if not (isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor) and want.shape == got.shape):
        return math.inf
    want, got = want.double(), got.double()
    diff, scale = float(torch.linalg.vector_norm(got - want)), float(torch.linalg.vector_norm(want))
    return diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)


def _gated_mlp(module: nn.Module, merge: bool) -> GatedMLP | None:
    """The GatedMLP standing in for `module`: one with `gate_proj`, `up_proj`, `down_proj` and `act_fn`, or (Phi-3's,
    GLM's) a `gate_up_proj` giving the packed [..., 2I], `down_proj` and `activation_fn` (or `act_fn`); kept where it
    gives the module's output on a random row (within MLP_TOLERANCE: which half is the gate, an activation sparsity
    as Gemma-3n's are the forward's choices). None on the meta device: nothing to try it on."""
    act = getattr(module, "act_fn", getattr(module, "activation_fn", None))
    activation = _activation(act) if isinstance(act, nn.Module) else None
    gate, up, down = (getattr(module, name, None) for name in ("gate_proj", "up_proj", "down_proj"))
    packed = gate is None and up is None
    first = getattr(module, "gate_up_proj", None) if packed else gate
    if activation is None or not all(isinstance(p, nn.Module) for p in (first, down) + (() if packed else (up,))):
        return None
    like = _input_like(first)
    width = getattr(first, "in_features", None) or getattr(down, "out_features", None)
    if like is None or not isinstance(width, int):
        return None
    new = GatedMLP(first, None, down, activation) if packed else GatedMLP(gate, up, down, activation, merge)
    return new if _output_error(module, new, like, width) <= MLP_TOLERANCE else None


class MoEExperts(nn.Module):
    """A mixture-of-experts layer's experts (see the module docstring) by rooftop.moe_experts; autograd, an autocast
    dtype, shapes other than [tokens, hidden] or a tensor no kernel runs on: `own_forward` (the module's
    own, whose parameters these are, under the same names), or where there is none (gpt-oss's experts re-laid: the
    original would keep a second copy alive) moe_experts_eager. gpt-oss's: biases `gate_up_proj_bias` /
    `down_proj_bias` and its clamped gate (activation "swiglu_oai", `swiglu` = (alpha, limit))."""

    def __init__(self, gate_up: torch.Tensor, down: torch.Tensor, activation: str, own_forward=None,
                 gate_up_bias: torch.Tensor | None = None, down_bias: torch.Tensor | None = None,
                 swiglu: tuple[float, float] = (1.702, 7.0)):
        super().__init__()
        self.gate_up_proj, self.down_proj, self.activation = gate_up, down, activation
        self.gate_up_proj_bias, self.down_proj_bias, self.swiglu = gate_up_bias, down_bias, swiglu
        self.own_forward = own_forward  # bound: the module stays alive without being a submodule

    def forward(self, hidden_states, top_k_index, top_k_weights):
        grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (
            hidden_states, top_k_weights, self.gate_up_proj, self.down_proj, self.gate_up_proj_bias,
            self.down_proj_bias))
        if (grad or hidden_states.dim() != 2 or top_k_index.dim() != 2
                or hidden_states.dtype != self.gate_up_proj.dtype  # autocast: theirs
                or not runs_kernel(hidden_states)):
            if self.own_forward is not None:
                return self.own_forward(hidden_states, top_k_index, top_k_weights)
            return moe_experts_eager(hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj,
                                     self.activation, **_moe_extras(self))
        return moe_experts(hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj,
                           self.activation, **_moe_extras(self))

    def extra_repr(self) -> str:
        experts, hidden, inner = self.down_proj.shape
        return f"experts={experts}, hidden={hidden}, intermediate={inner}, activation={self.activation}"


class QuantMoEExperts(nn.Module):
    """A MoEExperts with quantized experts (quantize_model: bits="fp8" float8_e4m3fn, bits=8 int8, bits=4 int4):
    gate_up_proj [E, 2I, H] and down_proj [E, H, I] code buffers with a scale per output row (gate_up_scale [E, 2I],
    down_scale [E, H], fp32), or int4 words [E, 2I, H / 8] and [E, H, I / 8] with a scale per group (gate_up_scale
    [E, 2I, H / group], down_scale [E, H, I / group]; moe.quantize_experts). On a device kernels run on:
    rooftop.moe_experts (weight-only: x stays in its dtype); elsewhere the eager loop over the experts hit, each
    dequantized to x's dtype as it is used."""

    def __init__(self, gate_up: torch.Tensor, gate_up_scale: torch.Tensor, down: torch.Tensor,
                 down_scale: torch.Tensor, activation: str, gate_up_bias: torch.Tensor | None = None,
                 down_bias: torch.Tensor | None = None, swiglu: tuple[float, float] = (1.702, 7.0)):
        super().__init__()
        for name, t in (("gate_up_proj", gate_up), ("gate_up_scale", gate_up_scale), ("down_proj", down),
                        ("down_scale", down_scale), ("gate_up_proj_bias", gate_up_bias),
                        ("down_proj_bias", down_bias)):
            self.register_buffer(name, t)
        self.activation, self.swiglu = activation, swiglu

    @classmethod
    def from_experts(cls, experts: MoEExperts, quant: str, group_size: int = 128) -> "QuantMoEExperts":
        """`experts` quantized to quant "fp8", "int8" or "int4" (groups of group_size; moe.quantize_experts); biases
        kept as they are."""
        if quant == "fp8":
            check_fp8_device("quantize_model(bits='fp8')", experts.gate_up_proj.device)
        gate_up, gate_up_scale, down, down_scale = quantize_experts(experts.gate_up_proj, experts.down_proj, quant,
                                                                    group_size)
        biases = [None if b is None else b.detach() for b in (experts.gate_up_proj_bias, experts.down_proj_bias)]
        return cls(gate_up, gate_up_scale, down, down_scale, experts.activation, *biases, experts.swiglu)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        extras = dict(gate_up_scale=self.gate_up_scale, down_scale=self.down_scale, **_moe_extras(self))
        if hidden_states.dim() == 2 and top_k_index.dim() == 2 and runs_kernel(hidden_states):
            return moe_experts(hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj,
                               self.activation, **extras)
        return moe_experts_eager(hidden_states, top_k_index, top_k_weights, self.gate_up_proj, self.down_proj,
                                 self.activation, **extras)

    def _apply(self, fn, recurse=True):
        """The codes and their scales keep their dtypes under model.half() / .to(dtype) (apply_keeping_dtypes)."""
        apply_keeping_dtypes(self, super()._apply, fn, recurse, ("gate_up_proj", "gate_up_scale", "down_proj",
                                                                  "down_scale"), torch.float32)
        return self

    def extra_repr(self) -> str:
        experts, hidden = self.down_proj.shape[:2]
        inner = self.gate_up_proj.shape[1] // 2
        codes = "int4" if self.down_proj.dtype == torch.int32 else str(self.down_proj.dtype).replace('torch.', '')
        return (f"experts={experts}, hidden={hidden}, intermediate={inner}, activation={self.activation}, "
                f"codes={codes}")


def _moe_extras(experts: nn.Module) -> dict:
    """moe_experts' keyword arguments for `experts`' biases and gate (MoEExperts, QuantMoEExperts)."""
    return dict(gate_up_bias=experts.gate_up_proj_bias, down_bias=experts.down_proj_bias,
                swiglu_alpha=experts.swiglu[0], swiglu_limit=experts.swiglu[1])


# transformers' experts flags (use_experts_implementation) under which the weights mean what moe_experts computes
_MOE_DEFAULT_FLAGS = {"has_bias": False, "has_post_expert_norm": False, "is_transposed": False,
                      "is_concatenated": True, "has_gate": True}


def _default_gate(module: nn.Module) -> bool:
    """Whether `module` gates as transformers' default (act(first half) * second half): no `_apply_gate` of its own
    (a clamp, an offset, interleaved halves: gpt-oss, Step-3)."""
    gate = getattr(type(module), "_apply_gate", None)
    return gate is None or (gate.__name__ == "_default_apply_gate"
                            and gate.__module__ == "transformers.integrations.moe")


def _moe_experts(module: nn.Module) -> MoEExperts | None:
    """The MoEExperts standing in for `module`: transformers' default layout (_default_experts) or gpt-oss's
    (_gpt_oss_experts), kept where rooftop.moe_experts gives the module's output on one and on three random tokens
    (and on three 30x larger), each routed to two random experts (within MLP_TOLERANCE; on a CPU without the
    interpreter its float64 reference). None on the meta device."""
    gate_up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
    if not all(isinstance(p, torch.Tensor) and p.dim() == 3 and not p.is_meta for p in (gate_up, down)):
        return None
    candidate = _default_experts(module, gate_up, down) or _gpt_oss_experts(module, gate_up, down)
    if candidate is None:
        return None
    experts, _, hidden = candidate.gate_up_proj.shape
    generator = torch.Generator(gate_up.device).manual_seed(0)
    for tokens, magnitude in ((1, 1.0), (3, 1.0), (3, 30.0)):  # one: the down projection split, as a decode step's;
        x = torch.randn(tokens, hidden, device=gate_up.device, generator=generator).to(gate_up.dtype) * magnitude
        index = torch.randint(0, experts, (tokens, 2), device=gate_up.device, generator=generator)  # large x: clamps
        weights = torch.rand(tokens, 2, device=gate_up.device, generator=generator).softmax(-1)
        try:
            with torch.no_grad():
                want = module(x, index, weights)
                got = moe_experts(x, index, weights, candidate.gate_up_proj, candidate.down_proj,
                                  candidate.activation, **_moe_extras(candidate))
        except Exception:  # another signature or layout: no swap
            return None
        zero = not isinstance(want, torch.Tensor) or int(torch.count_nonzero(want)) == 0  # tells nothing
        if zero or _relative_error(want, got) > MLP_TOLERANCE:
            return None
    return candidate


def _default_experts(module: nn.Module, gate_up: torch.Tensor, down: torch.Tensor) -> MoEExperts | None:
    """transformers' default layout, a MoEExperts on the module's own parameters: 3-D `gate_up_proj` [E, 2I, H] and
    `down_proj` [E, H, I] of one float dtype, its only parameters and no buffers, a SiLU or tanh-GELU `act_fn`, the
    default gate and layout flags where it has them (_MOE_DEFAULT_FLAGS)."""
    act = getattr(module, "act_fn", None)
    activation = _activation(act) if isinstance(act, nn.Module) else None
    experts, double, hidden = gate_up.shape
    if (activation is None or experts == 0 or double % 2 or down.shape != (experts, hidden, double // 2)
            or gate_up.dtype != down.dtype or gate_up.dtype not in (torch.float16, torch.bfloat16, torch.float32)):
        return None
    own = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
    if (own != {"gate_up_proj", "down_proj"} or not _default_gate(module)
            or any(getattr(module, flag, value) != value for flag, value in _MOE_DEFAULT_FLAGS.items())):
        return None
    return MoEExperts(gate_up, down, activation, module.forward)


def _gpt_oss_experts(module: nn.Module, gate_up: torch.Tensor, down: torch.Tensor) -> MoEExperts | None:
    """gpt-oss's layout (transformers' GptOssExperts: gate_up_proj [E, H, 2I] with gate and up columns interleaved,
    down_proj [E, I, H], biases gate_up_proj_bias [E, 2I] / down_proj_bias [E, H], a clamped gate of `alpha` and
    `limit`) re-laid once as moe_experts takes it ([E, 2I, H] gate rows then up rows, [E, H, I]): a MoEExperts owning
    the copies (the module's are dropped with it)."""
    flags = {"is_transposed": True, "is_concatenated": False, "has_bias": True}
    own = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
    alpha, limit = getattr(module, "alpha", None), getattr(module, "limit", None)
    if (own != {"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"}
            or any(getattr(module, flag, None) != value for flag, value in flags.items())
            or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in (alpha, limit))):
        return None
    experts, hidden, double = gate_up.shape
    bias, down_bias = module.gate_up_proj_bias, module.down_proj_bias
    if (experts == 0 or double % 2 or down.shape != (experts, double // 2, hidden) or bias.shape != (experts, double)
            or down_bias.shape != (experts, hidden) or gate_up.dtype not in (torch.float16, torch.bfloat16,
                                                                             torch.float32)):
        return None
    with torch.no_grad():
        relaid = torch.cat([gate_up[..., 0::2], gate_up[..., 1::2]], dim=-1).transpose(1, 2).contiguous()
        tensors = [relaid, down.transpose(1, 2).contiguous(), torch.cat([bias[:, 0::2], bias[:, 1::2]], dim=-1),
                   down_bias.detach().clone()]
    gate_up, down, bias, down_bias = (nn.Parameter(t, requires_grad=False) for t in tensors)
    return MoEExperts(gate_up, down, "swiglu_oai", None, bias, down_bias, (float(alpha), float(limit)))


def _input_like(proj: nn.Module) -> torch.Tensor | None:
    """An empty tensor of the dtype and device `proj` takes its input in: a QuantLinear's original weight dtype, an
    Fp8Linear's output dtype, else its first 16- or 32-bit floating parameter's (nn.Linear, a LoRA-wrapped one); None
    where it has none or it is on the meta device."""
    if isinstance(proj, QuantLinear):
        device, dtype = proj.packed.device, proj.weight_dtype
    elif isinstance(proj, Fp8Linear):
        device, dtype = proj.weight.device, proj.out_dtype
    else:
        first = next((p for p in proj.parameters() if p.is_floating_point() and p.element_size() > 1), None)
        if first is None:
            return None
        device, dtype = first.device, first.dtype
    return None if device.type == "meta" else torch.empty(0, device=device, dtype=dtype)


class _RopeForm(NamedTuple):
    """How a model's apply_rotary_pos_emb(q, k, cos, sin) rotates, as rooftop's RoPE kernel can compute it:
    `interleaved` GPT-J pairs (else NeoX halves); `pairs` its cos / sin repeat each value twice in a row (Cohere's,
    Helium's: repeat_interleave; else the two halves repeated, Llama's and GLM's); `partial` a cos / sin narrower than
    the head rotates the first dims and passes the rest (Phi-3's)."""
    interleaved: bool
    pairs: bool
    partial: bool

    def takes(self, q, k, cos, sin) -> bool:
        """Whether the kernel takes the call: q, k [B, H, S, D] of one dtype with a unit last stride, cos / sin
        [S, D] or [B, S, D] (`partial`: [..., rd] for an even rd < D too), no autograd."""
        D, rd = q.shape[-1], cos.shape[-1]
        shapes = (q.dim() == 4 and k.dim() == 4 and k.shape[-1] == D and cos.shape == sin.shape
                  and cos.dim() in (2, 3) and (rd == D or (self.partial and 0 < rd < D and rd % 2 == 0))
                  and cos.shape[-2] == q.shape[2])
        grads = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, cos, sin))
        return shapes and not grads and q.dtype == k.dtype and q.stride(-1) == 1 and k.stride(-1) == 1

    def kernel_args(self, cos, sin) -> tuple:
        """(cos, sin, keywords) for rooftop's RoPE: pairs-repeated cos / sin as their every other column (a view)."""
        keywords = dict(interleaved=self.interleaved, rotary_dim=cos.shape[-1])
        return (cos[..., ::2], sin[..., ::2], keywords) if self.pairs else (cos, sin, keywords)


def _rope_form(rotary) -> _RopeForm | None:
    """The form (_RopeForm) in which `rotary(q, k, cos, sin)` is rooftop's RoPE, tried on small CPU tensors over
    8-wide heads: NeoX with halves-repeated cos (Llama), GPT-J with halves-repeated cos (GLM), GPT-J with pairs-
    repeated cos (Cohere, Helium, Ernie 4.5); partial where it also is so over 4 of the 8 dims. None: none of them."""
    for interleaved, pairs in ((False, False), (True, False), (True, True)):
        if _rotates_as(rotary, 8, interleaved, pairs):
            return _RopeForm(interleaved, pairs, _rotates_as(rotary, 4, interleaved, pairs))
    return None


def _rotates_as(rotary, rotary_dim: int, interleaved: bool, pairs: bool) -> bool:
    """Whether `rotary(q, k, cos, sin)` on small CPU tensors gives rooftop's RoPE (rope_reference) over the first
    `rotary_dim` of 8 dims, its cos / sin [B, S, rotary_dim] in the form `pairs` says."""
    generator = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 2, 3, 8, generator=generator) for _ in range(2))
    angles = torch.rand(1, 3, rotary_dim // 2, generator=generator) * 6.0
    cos, sin = angles.cos(), angles.sin()  # one value a frequency
    repeat = (lambda t: torch.stack((t, t), -1).flatten(-2)) if pairs else (lambda t: torch.cat((t, t), -1))
    try:
        with torch.no_grad():
            got = rotary(q, k, repeat(cos), repeat(sin))
    except Exception:  # any failure: not a function the kernel can stand in for
        return False
    if not (isinstance(got, tuple) and len(got) == 2):
        return False
    return all(isinstance(t, torch.Tensor) and t.shape == ref.shape and torch.allclose(t.double(), ref, atol=1e-5)
               for t, ref in zip(got, rope_reference(q, k, cos, sin, None, interleaved, rotary_dim)))


def _fused_rotary(original, form: _RopeForm):
    """Hugging Face's apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1) by rooftop.apply_rope where the kernel
    takes the call (`form`: how `original` rotates), else `original`."""
    def apply_rotary_pos_emb(q, k, cos, sin, *args, **kwargs):
        plain = not args and kwargs.get("unsqueeze_dim", 1) == 1 and set(kwargs) <= {"unsqueeze_dim"}
        if plain and form.takes(q, k, cos, sin):
            cos, sin, keywords = form.kernel_args(cos, sin)
            return apply_rope(q, k, cos, sin, **keywords)
        return original(q, k, cos, sin, *args, **kwargs)
    return apply_rotary_pos_emb


def _rope_append(rotary, form: _RopeForm, fp8: bool = False):
    """`q, k, appended = rope_append(q, k, v, cos, sin, cache, layer_idx)` of a patched attention forward, where it
    applied `rotary` (apply_rotary_pos_emb, which rotates as `form` says) and its cache's update follows: where
    _static_layer finds the layer and the RoPE kernel takes the call, rooftop.apply_rope_append_kv (q rotated, the
    rotated k and v written into the layer's cache at its length, one kernel) and the layer as `appended`, which the
    update then only reads; else rotary(q, k, cos, sin) and None. fp8 (kv_cache_dtype="fp8"): the layer's tensors
    made fp8 codes first at the scales of the attention module (_rooftop_module, `self` as the forward passes it;
    _fp8_layer), which the kernel then writes; not while the module's scales wait for calibration (the update then
    calibrates from the rotated keys)."""
    def rope_append(q, k, v, cos, sin, cache, layer_idx, _rooftop_module=None):
        layer = _static_layer(cache, layer_idx, k, v) if cache is not None else None
        if fp8 and _rooftop_module.rooftop_kv_scales == "prefill":
            layer = None
        if layer is not None and form.takes(q, k, cos, sin):
            k_scale, v_scale = _fp8_layer(layer, _rooftop_module, k, v) if fp8 else (None, None)
            cos, sin, keywords = form.kernel_args(cos, sin)
            q = apply_rope_append_kv(q, k, v, cos, sin, layer.keys, layer.values, layer.cumulative_length,
                                     k_scale=k_scale, v_scale=v_scale, **keywords)
            return q, k, layer
        q, k = rotary(q, k, cos, sin)
        return q, k, None
    return rope_append


# kwargs of transformers' attention functions that change the maths (soft-capping, attention sinks, head masks, a
# position bias) or ask for the weights: such a call goes to the function as it was (but the sinks and the cap of the
# eager forms _routed knows)
_REFUSES = ("softcap", "s_aux", "sinks", "head_mask", "position_bias", "output_attentions")
# mask elements _prefill_window compares a pass (the mask itself may be GBs at long prompts: [B, 1, Sq, Sk])
MASK_CHECK_ELEMENTS = 1 << 24
_per_mask: dict[tuple, tuple] = {}  # (what, id of a mask, ...) -> (weak reference, version, what the mask gives)
# Masks made under torch.inference_mode have no version counter: what is read from one is kept only while a patched
# model's forward runs (its hooks: _forward_begins / _forward_ends), for the layers of that forward.
_in_forward: dict[tuple, tuple] = {}  # (what, id of a mask, ...) -> (the mask, what it gives)
_forwards_running = [0, None]  # patched forwards running, the outermost one's module


def _forward_begins(module, args) -> None:
    """A patched model's forward pre-hook (patch_model): every forward starts with nothing kept (a nested one drops
    its caller's: read again, not wrong). The outermost module beginning again while it runs means its forward died
    past the forward hook (KeyboardInterrupt and other BaseExceptions skip always_call hooks): the count restarts."""
    if torch.compiler.is_compiling():
        return
    _in_forward.clear()
    if _forwards_running[0] and _forwards_running[1] is module:
        _forwards_running[0] = 0
    if not _forwards_running[0]:
        _forwards_running[1] = module
    _forwards_running[0] += 1


def _forward_ends(module, args, output) -> None:
    """A patched model's forward hook, run on exceptions too: the last forward to end drops _in_forward."""
    if not torch.compiler.is_compiling():
        _forwards_running[0] = max(0, _forwards_running[0] - 1)
        if not _forwards_running[0]:
            _in_forward.clear()
            _forwards_running[1] = None


def _once_per_mask(key: tuple, mask: torch.Tensor, compute):
    """compute() once for the mask object the layers of a forward share (key: what is computed, and its arguments but
    the mask), again where the mask was written in place since (a caller's buffer reused: its version moved). A mask
    made under torch.inference_mode (as generate() runs) has no version to tell that by: kept for the rest of the
    patched model's forward it was read in (a forward writes no mask in place between its layers), computed every
    call outside one."""
    key = (*key, id(mask))
    if mask.is_inference():
        if not _forwards_running[0]:
            return compute()
        kept = _in_forward.get(key)
        if kept is not None and kept[0] is mask:
            return kept[1]
        if len(_in_forward) > 64:  # a forward reads a few masks; more: bounded
            _in_forward.clear()
        _in_forward[key] = (mask, compute())
        return _in_forward[key][1]
    kept = _per_mask.get(key)
    if kept is not None and kept[0]() is mask and kept[1] == mask._version:
        return kept[2]
    value = compute()
    if len(_per_mask) > 64:
        _per_mask.clear()
    # dropped with the mask: a padded prefill's layout holds index tensors of its tokens' size on the device
    _per_mask[key] = (weakref.ref(mask, lambda _, key=key: _per_mask.pop(key, None)), mask._version, value)
    return value


def _decode_mask_rows(query, key, mask, additive=False):
    """For a decode step (one query a sequence): the [B, S] key mask of transformers' boolean SDPA mask ([B or 1, 1,
    1, >= S]; additive: its eager mask, 0 where a key is seen), None where it gave none (every key seen); False where
    the call is not one decode_attention takes."""
    if query.dim() != 4 or query.shape[2] != 1 or key.shape[2] == 0:
        return False
    if mask is None:
        return None
    if not (isinstance(mask, torch.Tensor) and (mask.is_floating_point() if additive else mask.dtype == torch.bool)
            and mask.dim() == 4 and mask.shape[1] == 1 and mask.shape[2] == 1 and mask.shape[0] in (1, query.shape[0])
            and mask.shape[3] >= key.shape[2]):
        return False
    rows = mask[:, 0, 0, :key.shape[2]]
    return (rows == 0 if additive else rows).expand(query.shape[0], -1)


def _cache_lengths(mask, rows, key) -> tuple[torch.Tensor, torch.Tensor | None]:
    """int32 [B]: keys up to the last one the mask lets through (every key without a mask), and decode_attention's
    mask_bounds of the mask's rows over them (None without a mask); with the bounds, a mask that is one range of keys
    a sequence (left padding, a window) is not read. The layers of a step share one mask object: both are computed
    once (not under torch.compile, which fuses them anyway)."""
    if rows is None:
        return torch.full((key.shape[0],), key.shape[2], dtype=torch.int32, device=key.device), None

    def lengths_and_bounds():
        positions = torch.arange(1, rows.shape[1] + 1, dtype=torch.int32, device=rows.device)
        lengths = torch.where(rows, positions, 0).amax(-1).to(torch.int32)
        return lengths, key_mask_bounds(rows, lengths)
    if torch.compiler.is_compiling():
        return lengths_and_bounds()
    return _once_per_mask(("lengths", key.shape[2]), mask, lengths_and_bounds)


def _readable_prefill_mask(query, key, mask, additive, batches: tuple[int, ...]) -> bool:
    """Whether `mask` has the form of transformers' mask for a prefill of `query` over `key` ([b, 1, Sq, >= Sk], b in
    `batches`; boolean, additive: its eager float mask), on the queries' device, and may be read on the host: not
    under torch.compile or CUDA graph capture, whose traces a host sync would break."""
    if query.dim() != 4 or query.shape[2] < 2 or key.shape[2] == 0 or key.shape[0] != query.shape[0]:
        return False
    return (isinstance(mask, torch.Tensor) and (mask.is_floating_point() if additive else mask.dtype == torch.bool)
            and mask.dim() == 4 and mask.shape[1] == 1 and mask.shape[2] == query.shape[2]
            and mask.shape[0] in batches and mask.shape[3] >= key.shape[2] and mask.device == query.device
            and not torch.compiler.is_compiling()
            and not (mask.is_cuda and torch.cuda.is_current_stream_capturing()))


def _prefill_window(query, key, mask, additive=False) -> tuple[int, int | None] | None:
    """For a prefill (several queries a sequence) under transformers' boolean SDPA mask ([B or 1, 1, Sq, >= Sk];
    additive: its eager mask, 0 where a key is seen, the dtype's least value where not): (n, left) where every
    sequence's query i sees exactly the keys [i' - left, i'], i' = i + n - Sq (rooftop.attention's causal alignment
    over the first n keys; left None: unbounded), else None (padding, a mask of another form or with soft biases, a
    call under CUDA graph capture or torch.compile, whose traces a host sync would break). One host sync a mask: the
    layers of a forward share it (one for the full layers, one for the sliding-window ones)."""
    if not _readable_prefill_mask(query, key, mask, additive, (1, query.shape[0])):
        return None
    Sq, Sk = query.shape[2], key.shape[2]

    def window():
        scores = mask[:, 0, :, :Sk]
        keys = torch.arange(Sk, device=mask.device)
        last = scores[:, -1] == 0 if additive else scores[:, -1]
        n = torch.where(last, keys + 1, 0).amax(-1)  # [b]: keys up to the last query's last one
        count = last.sum(-1)  # [b]: how many the last query sees (its window)
        exact = (n == n[0]).all() & (count == count[0]).all() & (count[0] > 0)
        rows = max(1, MASK_CHECK_ELEMENTS // (scores.shape[0] * Sk))  # a pass's temporaries stay small
        for first in range(0, Sq, rows):
            part = scores[:, first:first + rows]
            seen = part == 0 if additive else part
            aligned = (torch.arange(first, first + part.shape[1], device=mask.device) - Sq)[None, :, None] \
                + n[:, None, None]  # i' of these queries [b, rows, 1]
            exact &= (seen == ((keys <= aligned) & (keys > aligned - count[:, None, None]))).all()
            if additive:  # nothing between 0 and masked
                exact &= (seen | (part <= torch.finfo(part.dtype).min / 2)).all()
        ok, keys_read, width = torch.stack([exact.long(), n[0], count[0]]).tolist()
        return (keys_read, None if width == keys_read else width - 1) if ok else None
    return _once_per_mask(("prefill", Sq, Sk, additive), mask, window)


class _Padded(NamedTuple):
    """A left-padded prefill's layout for attention_varlen (_prefill_padded): the (sequence, position) of each
    sequence's queries and keys past its padding, their cu_seqlens and longest runs, the window's left bound."""
    q_rows: tuple[torch.Tensor, torch.Tensor]
    k_rows: tuple[torch.Tensor, torch.Tensor]
    cu_q: torch.Tensor
    cu_k: torch.Tensor
    max_q: int
    max_k: int
    left: int | None


def _rows_past(starts: torch.Tensor, lengths: torch.Tensor, total: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(sequence, position) of `lengths[b]` rows from `starts[b]` in each sequence b, `total` rows in all (no host
    synchronisation: the total is known)."""
    sequences = torch.arange(starts.numel(), device=starts.device)
    b = torch.repeat_interleave(sequences, lengths, output_size=total)
    offsets = torch.cumsum(lengths, 0) - lengths
    return b, torch.arange(total, device=starts.device) - offsets[b] + starts[b]


def _prefill_padded(query, key, mask, additive=False) -> _Padded | None:
    """For a prefill of left-padded sequences (generate()'s batches) under transformers' mask ([B, 1, Sq, >= Sk];
    additive: its eager mask): the _Padded layout where each sequence b's keys are [p_b, n) (its padding before; n
    the last query's last key + 1, the same for every sequence: a static cache's unwritten slots after) and each of
    its queries past the padding, i' = i + n - Sq >= p_b, sees exactly the keys [max(p_b, i' - left), i'] (left None:
    unbounded), else None. The padding's own query rows are not read (their outputs: zeros, where stock's are
    whatever SDPA makes of an empty row; nothing past them reads them). One host sync a mask (its layers share it;
    _once_per_mask), as _prefill_window's; under CUDA graph capture or torch.compile None."""
    if not _readable_prefill_mask(query, key, mask, additive, (query.shape[0],)):
        return None
    B, _, Sq, _ = query.shape
    Sk = key.shape[2]

    def layout():
        scores = mask[:, 0, :, :Sk]
        keys = torch.arange(Sk, device=mask.device)
        last = scores[:, -1] == 0 if additive else scores[:, -1]  # the last query: no sequence's padding
        n = torch.where(last, keys + 1, 0).amax(-1)  # [B]: keys up to the last query's last one
        count = last.sum(-1)  # [B]: the keys it sees
        width = count.max()
        seen_any = torch.zeros(B, Sk, dtype=torch.bool, device=mask.device)
        rows = max(1, MASK_CHECK_ELEMENTS // (B * Sk))
        for first in range(0, Sq, rows):  # a pass's temporaries stay small
            part = scores[:, first:first + rows]
            seen_any |= (part == 0 if additive else part).any(1)
        start = torch.where(seen_any, keys, Sk).amin(-1)  # [B]: p_b, the first key any query sees
        exact = (n == n[0]).all() & (count > 0).all() & (seen_any == ((keys >= start[:, None]) & (keys < n[0]))).all()
        # unbounded where every last row sees all of its sequence's keys, else a window of `width` keys
        unbounded = (count == n[0] - start).all()
        exact &= unbounded | (count == torch.minimum(width, n[0] - start)).all()
        for first in range(0, Sq, rows):
            part = scores[:, first:first + rows]
            seen = part == 0 if additive else part
            aligned = (torch.arange(first, first + part.shape[1], device=mask.device) - Sq)[None, :, None] + n[0]
            want = (keys >= start[:, None, None]) & (keys <= aligned)
            want &= unbounded | (keys > aligned - width)
            padding = aligned < start[:, None, None]  # [B, rows, 1]: the padding's own queries, not read
            exact &= ((seen == want) | padding).all()
            if additive:
                exact &= (seen | (part <= torch.finfo(part.dtype).min / 2) | padding).all()
        ok, open_window, widest, keys_read, *starts = torch.cat(
            [torch.stack([exact.long(), unbounded.long(), width, n[0]]), start]).tolist()
        if not ok:
            return None
        first_q = (start + Sq - keys_read).clamp(min=0)  # [B]: each sequence's first query past its padding
        lengths_q, lengths_k = Sq - first_q, keys_read - start
        counts_q = [Sq - max(0, p + Sq - keys_read) for p in starts]
        counts_k = [keys_read - p for p in starts]
        cu_q, cu_k = (torch.nn.functional.pad(lengths.cumsum(0), (1, 0)).to(torch.int32)
                      for lengths in (lengths_q, lengths_k))
        return _Padded(_rows_past(first_q, lengths_q, sum(counts_q)), _rows_past(start, lengths_k, sum(counts_k)),
                       cu_q, cu_k, max(counts_q), max(counts_k), None if open_window else widest - 1)
    return _once_per_mask(("padded", Sq, Sk, additive), mask, layout)


def _padded_attention(query, key, value, padded: _Padded, scale, sinks, softcap) -> torch.Tensor:
    """attention_varlen over a left-padded prefill's sequences past their padding (_Padded): [B, Sq, Hq, D], zeros
    for the padding's queries."""
    B, Hq, Sq, D = query.shape
    q = query.transpose(1, 2)[padded.q_rows]  # [total_q, Hq, D]: a gather, as each of k and v
    k, v = (t.transpose(1, 2)[padded.k_rows] for t in (key, value))
    out = attention_varlen(q, k, v, padded.cu_q, padded.cu_k, padded.max_q, padded.max_k, causal=True, scale=scale,
                           window=padded.left, sinks=sinks, softcap=softcap)
    full = torch.zeros(B, Sq, Hq, D, device=query.device, dtype=query.dtype)
    full[padded.q_rows] = out
    return full


def _prefill_keys(module, query, key, mask, kwargs, additive) -> tuple[int, bool, int | None] | None:
    """(keys read, causal, window left) of a prefill rooftop.attention computes as the attention function would, or
    None. Without a mask (SDPA's; the eager function is always given one, and none is refused) transformers' rule:
    causal where is_causal (the kwarg, else the module's; true by default), the keys then cut to the queries where the
    cache holds more (an empty StaticCache), SDPA's top-left alignment being bottom-right's there; otherwise every
    key. Under a mask, _prefill_window."""
    if query.dim() != 4 or query.shape[2] < 2 or key.shape[2] == 0:
        return None
    Sq, Sk = query.shape[2], key.shape[2]
    if mask is not None:
        window = _prefill_window(query, key, mask, additive)
        return None if window is None else (window[0], True, window[1])
    if additive:
        return None
    causal = kwargs.get("is_causal")
    if not (getattr(module, "is_causal", True) if causal is None else causal):
        return Sk, False, None
    return (Sq, True, None) if Sk >= Sq else None


def _given(value) -> bool:
    """Whether an attention kwarg asks for something: a tensor, or a truthy flag (output_attentions=False does not)."""
    return isinstance(value, torch.Tensor) or bool(value)


def _prefill_by_default(query) -> bool:
    """Where rooftop.attention takes SDPA's prefill unless told: what was measured against SDPA's backends, 16-bit
    heads of 64, 128 or 256 on sm_90 GPUs (H200, benchmarks/results/h200-2026-12-01-attention.json: 1.3-2.2x its
    flash backend, torch's first choice, from S = 512; 0.93-1.07x cuDNN's at D = 128)."""
    return (query.is_cuda and query.dtype in (torch.bfloat16, torch.float16) and query.shape[-1] in (64, 128, 256)
            and is_sm90(query.device.index))


def _routed(original, sinks_eager=False, softcap_eager=False, prefill=None):
    """transformers' SDPA attention function (`original`), a decode step over a cache (one query a sequence, the
    boolean mask a model builds, nothing that changes the maths) answered by rooftop.decode_attention: the keys up to
    each sequence's last unmasked one read, the mask applied to them (SDPA reads the whole static cache under it); and
    with `prefill` (None: _prefill_by_default) a prefill by rooftop.attention where it computes what SDPA would
    (_prefill_keys: causal or dense without a mask; a mask causal within a window for every sequence; left padding:
    attention_varlen past it, _prefill_padded; else SDPA).
    sinks_eager: the function is gpt-oss's eager one instead (module.sinks, also passed as s_aux, in its softmax; its
    additive mask, which transformers builds as 0 or the dtype's least value: a caller's own float mask with soft
    biases would be read as seen only where 0), its prefill routed unless prefill is False: the eager function
    materialises the scores, [B, Hq, Sq, Sk + 1] in the model's dtype a layer. softcap_eager: the function is Gemma
    2's eager one (its `softcap` kwarg capping the scores before the additive mask), taken likewise, the cap in the
    kernels."""
    eager = sinks_eager or softcap_eager  # an eager function's form: transformers' additive mask

    def attention_function(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
        rows = _decode_mask_rows(query, key, attention_mask, additive=eager)
        grads = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        sinks = getattr(module, "sinks", None) if sinks_eager else None  # what gpt-oss's eager function reads
        softcap = kwargs.get("softcap") if softcap_eager else None
        refused = [n for n in _REFUSES if _given(kwargs.get(n)) and not (sinks_eager and n == "s_aux")
                   and not (softcap_eager and n == "softcap")]
        if sinks_eager and not (isinstance(sinks, torch.Tensor) and kwargs.get("s_aux") is sinks
                                and sinks.shape == (query.shape[1],) and sinks.dtype in FLOAT_DTYPES
                                and sinks.device == query.device
                                and not (torch.is_grad_enabled() and sinks.requires_grad)):
            refused.append("s_aux")
        if softcap is not None and not (type(softcap) in (int, float)
                                        and SOFTCAP_BOUNDS[0] <= softcap <= SOFTCAP_BOUNDS[1]):
            refused.append("softcap")
        if eager and getattr(getattr(module, "config", None), "output_attentions", False):
            refused.append("output_attentions")  # the eager function's weights, collected from its outputs
        takes = (not dropout and not grads and not refused
                 and runs_kernel(query) and query.device == key.device == value.device  # not a CPU model: SDPA's
                 and key.dtype == value.dtype and key.dtype in (query.dtype, FP8_KV) and key.shape == value.shape
                 and query.shape[-1] == key.shape[-1] <= DECODE_MAX_HEAD_DIM and query.shape[1] % key.shape[1] == 0
                 and query.stride(-1) == key.stride(-1) == value.stride(-1) == 1
                 and (scaling is None or scaling > 0))
        # a cache of fp8 codes (patch_model's kv_cache_dtype): the scales its module holds (_fp8_layer), or for a layer
        # sharing another's keys and values, that one's (_kv_sharing_sources)
        holder = getattr(module, "__dict__", {}).get("_rooftop_kv_source", module)
        scales = getattr(holder, "rooftop_kv_scales", None) if key.dtype == FP8_KV else (None, None)
        if not isinstance(scales, tuple):  # (None: a layer of no fp8 patch given codes, e.g. another model's)
            raise ValueError(f"{type(module).__name__} got fp8 keys but knows no scales for them: patch the model "
                             'that writes them, and this one, with patch_model(kv_cache_dtype="fp8")')
        k_scale, v_scale = scales
        if takes and rows is not False:
            lengths, bounds = _cache_lengths(attention_mask, rows, key)
            out = decode_attention(query, key, value, lengths, scale=scaling, key_mask=rows, mask_bounds=bounds,
                                   sinks=sinks, softcap=softcap, k_scale=k_scale, v_scale=v_scale)
            return out.transpose(1, 2), None
        if key.dtype == FP8_KV:  # read otherwise: a 16-bit copy
            key, value = ((x.float() * s).to(query.dtype) for x, s in ((key, k_scale), (value, v_scale)))
        if takes and query.shape[-1] <= MAX_HEAD_DIM:  # prefill: attention's heads (decode_attention's go to 512)
            wanted = prefill if prefill is not None else eager or _prefill_by_default(query)
            routed = wanted and _prefill_keys(module, query, key, attention_mask, kwargs, additive=eager)
            if routed:
                n, causal, left = routed
                out = attention(query, key[:, :, :n], value[:, :, :n], causal=causal, scale=scaling, window=left,
                                sinks=sinks, softcap=softcap)
                return out.transpose(1, 2), None
            padded = wanted and _prefill_padded(query, key, attention_mask, additive=eager)
            if padded:
                return _padded_attention(query, key, value, padded, scaling, sinks, softcap), None
        return original(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    return attention_function


def _known_static_classes():
    """(Cache, StaticLayer) of transformers where StaticLayer.update is the one rooftop.append_kv stands in for (5.17 /
    5.24: it appends at its 0-d cumulative_length tensor by index_copy_ and adds the rows), else None."""
    try:
        from transformers.cache_utils import Cache, StaticLayer
    except ImportError:
        return None
    names = StaticLayer.update.__code__.co_names
    return (Cache, StaticLayer) if "cumulative_length" in names and "index_copy_" in names else None


_static_classes = None  # _known_static_classes(), once a patched forward routes a cache's update (_cache_update)


def _static_layer(cache, layer_idx, key, value):
    """The layer of `cache` whose update rooftop.append_kv does where it is a StaticLayer of _static_classes
    (Cache.update, not overridden, only finds the layer without offloading), the layer initialised, its tensors the
    new rows' shape and dtype (or fp8 codes); else None."""
    layer = _static_layer_or_why(cache, layer_idx, key, value)
    return None if isinstance(layer, str) else layer


def _static_layer_or_why(cache, layer_idx, key, value):
    """_static_layer's layer, or why there is none (a phrase, for _warn_cache_kept)."""
    if _static_classes is None:
        return "transformers' StaticLayer.update is not the one rooftop.append_kv stands in for"
    Cache, StaticLayer = _static_classes
    if type(cache).update is not Cache.update or getattr(cache, "offloading", True) or not isinstance(layer_idx, int):
        return f"its cache is a {type(cache).__name__} (not a StaticCache, or one that offloads or overrides update)"
    layers = getattr(cache, "layers", ())
    if not 0 <= layer_idx < len(layers):
        return f"its cache has no layer {layer_idx}"
    layer = layers[layer_idx]
    if type(layer) is not StaticLayer:
        return f"its cache layer is a {type(layer).__name__}, not a StaticLayer"
    if not layer.is_initialized:
        return "its cache layer is not initialised"
    if key.shape[-1] > DECODE_MAX_HEAD_DIM:
        return f"its heads of {key.shape[-1]} are past decode_attention's {DECODE_MAX_HEAD_DIM}"
    if not runs_kernel(key):
        return f"its keys on {key.device} run no Triton kernel"
    length = layer.cumulative_length
    if not (isinstance(length, torch.Tensor) and length.dim() == 0 and length.device == key.device
            and key.dtype == value.dtype and layer.keys.dtype == layer.values.dtype
            and layer.keys.dtype in (key.dtype, FP8_KV)
            and key.dim() == 4 and key.shape == value.shape and layer.keys.shape[0] >= key.shape[0]
            and (layer.keys.shape[1], layer.keys.shape[3]) == (key.shape[1], key.shape[3])
            and layer.values.shape == layer.keys.shape and key.stride(-1) == value.stride(-1) == 1):
        return (f"its cache layer ({tuple(layer.keys.shape)} {layer.keys.dtype}) does not take keys {tuple(key.shape)} "
                f"{key.dtype} as they come")
    return layer


def _warn_cache_kept(module, why: str) -> None:
    """kv_cache_dtype="fp8" asked for, but this attention's cache layer stays as the model made it (its dtype, not fp8
    codes), `why`: once a module and reason, on an eager call (a forward compiled from its first call says nothing);
    the same words for each module of a class, which Python's default filter shows once."""
    said = getattr(module, "_rooftop_caches_kept", None)
    if torch.compiler.is_compiling() or said is not None and why in said:
        return
    if module is not None:
        module._rooftop_caches_kept = (*(said or ()), why)
    warnings.warn(f'kv_cache_dtype="fp8": a {type(module).__name__} keeps its cache in the model\'s dtype where {why}',
                  stacklevel=3)


def _cache_update(cache, key, value, layer_idx, *args, _rooftop_appended=None, _rooftop_fp8=False,
                  _rooftop_module=None, **kwargs):
    """cache.update(key, value, layer_idx, ...) of a patched attention forward (_rooftop_module: its module, `self`, as
    the forward passes it): by rooftop.append_kv where _static_layer finds the layer, else the cache's own; only the
    layer's tensors where the RoPE before has appended the rows (_rooftop_appended: that layer, from _rope_append).
    _rooftop_fp8 (patch_model's kv_cache_dtype="fp8"): a layer _static_layer finds 16-bit has its tensors made fp8
    codes at the module's scales (_fp8_layer): after the cache's own update where that initialised the layer (its
    return, the 16-bit rows, stays this call's), before append_kv where the layer was initialised ahead
    (Cache.early_initialization, as generate's chunked prefill does)."""
    if _rooftop_appended is not None:
        return _rooftop_appended.keys, _rooftop_appended.values
    layer = _static_layer(cache, layer_idx, key, value)
    if layer is None:
        rows = cache.update(key, value, layer_idx, *args, **kwargs)
        layer = _static_layer_or_why(cache, layer_idx, key, value) if _rooftop_fp8 else None
        if isinstance(layer, str):
            _warn_cache_kept(_rooftop_module, layer)
        elif layer is not None:
            _fp8_layer(layer, _rooftop_module, key, value)
        return rows
    k_scale, v_scale = _fp8_layer(layer, _rooftop_module, key, value) if _rooftop_fp8 else (None, None)
    append_kv(layer.keys, layer.values, key, value, layer.cumulative_length, k_scale=k_scale, v_scale=v_scale)
    return layer.keys, layer.values


# vLLM's calculate_kv_scales: a cache's scale is its first rows' largest magnitude over these (codes of those rows up
# to 200 and 100 of e4m3's 448: headroom for later rows, which saturate past it)
KV_CALIBRATION_RANGE = (200.0, 100.0)


def _fp8_layer(layer, module, key, value) -> tuple[float, float]:
    """The (k_scale, v_scale) of a StaticLayer's fp8 codes for the attention `module`, its keys and values made codes
    at the module's rooftop_kv_scales where they are not yet (the scales kept as the layer's rooftop_kv_scales), marked
    static for dynamo as transformers marks the tensors it makes (cudagraphs then take them as fixed addresses); on a
    GPU without fp8 kernels an error before anything changes. A module's "prefill" becomes the scales of the first
    layer it meets: a new one's calibrated from this update's key and value (KV_CALIBRATION_RANGE; a zero or
    non-finite magnitude keeps 1.0: a host sync, as a compiled forward cannot under fullgraph), the scales of one made
    codes before. A layer made codes before at other scales than the module's: an error (after reset() a layer keeps
    its scales, its codes zeroed). A layer of fp8 tensors without scales (a cache initialised ahead in fp8) is new."""
    scales = module.rooftop_kv_scales
    written = getattr(layer, "rooftop_kv_scales", None)
    if written is not None:
        if isinstance(scales, str):  # "prefill"
            scales = module.rooftop_kv_scales = written
        elif tuple(scales) != written:
            raise ValueError(f"a cache layer holds fp8 codes at scales {written}, but its attention module "
                             f"{type(module).__name__} (layer_idx {getattr(module, 'layer_idx', None)}) reads them at "
                             f"{tuple(scales)} (patch_model's kv_scales): a cache is read by the model that filled it")
        return written
    check_fp8_device('patch_model(kv_cache_dtype="fp8")', layer.keys.device)
    if isinstance(scales, str):
        largest = torch.stack([key.detach().abs().amax().float(), value.detach().abs().amax().float()]).tolist()
        scales = module.rooftop_kv_scales = tuple(m / r if 0 < m < math.inf else 1.0
                                                  for m, r in zip(largest, KV_CALIBRATION_RANGE))
    if layer.keys.dtype != FP8_KV:
        layer.keys, layer.values = quantize_kv(layer.keys, scales[0]), quantize_kv(layer.values, scales[1])
        if not torch.compiler.is_compiling():
            torch._dynamo.mark_static_address(layer.keys)
            torch._dynamo.mark_static_address(layer.values)
    layer.rooftop_kv_scales = tuple(scales)
    return layer.rooftop_kv_scales


CACHE_ARGS = ("cache", "past_key_value", "past_key_values", "layer_past")


def _self_name(node: ast.FunctionDef) -> str | None:
    """The name a method's first parameter (positional-only or not) gives its instance; None without one."""
    positional = (*node.args.posonlyargs, *node.args.args)
    return positional[0].arg if positional else None


def _cache_params(node: ast.FunctionDef) -> set[str]:
    """The parameters of a method named as a cache (CACHE_ARGS)."""
    return {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)} & set(CACHE_ARGS)


def _is_cache_update(node: ast.AST, params: set[str]) -> bool:
    """Whether `node` is a call `<cache>.update(...)`, <cache> one of `params`."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name) and node.func.value.id in params)


def _cache_rows_only_attended(node: ast.FunctionDef) -> bool:
    """Whether the names a forward assigns `<cache>.update(...)`'s keys and values to (CACHE_ARGS) are read only as
    arguments of calls that take both (its attention function's): fp8 codes may be returned there, nowhere else (Doge
    computes its dynamic mask from the cache's values), or as one tuple (a KV-sharing layer's store)."""
    params = _cache_params(node)
    names: set[str] = set()
    after = math.inf  # the first update's line: names read before it hold the new rows, not the cache's
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and _is_cache_update(sub.value, params):
            names |= {t.id for target in sub.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            after = min(after, sub.end_lineno)
    attended = set()  # ids of the Name nodes passed to a call that takes every one of `names`, or packed together
    for sub in ast.walk(node):  # in one tuple (Gemma 3n / 4 keep their full-length rows so for sharing layers)
        if isinstance(sub, (ast.Call, ast.Tuple)):
            given = [a for a in ((*sub.args, *(k.value for k in sub.keywords)) if isinstance(sub, ast.Call)
                                 else sub.elts) if isinstance(a, ast.Name)]
            if names <= {a.id for a in given}:
                attended |= {id(a) for a in given}
    return all(id(sub) in attended for sub in ast.walk(node) if isinstance(sub, ast.Name)
               and isinstance(sub.ctx, ast.Load) and sub.id in names and sub.lineno > after)


def _cache_update_rewrite(node: ast.FunctionDef) -> int:
    """`<cache>.update(k, v, layer_idx, ...)` (<cache> a parameter named as in CACHE_ARGS, three or more positional
    arguments) of a method becomes `_rooftop_cache_update(<cache>, k, v, layer_idx, ..., _rooftop_module=self)`.
    Returns how many calls changed."""
    params = _cache_params(node)
    self_name = _self_name(node)
    if self_name is None:
        return 0
    found = 0
    for sub in ast.walk(node):
        if (_is_cache_update(sub, params) and len(sub.args) >= 3
                and not any(isinstance(a, ast.Starred) for a in sub.args[:3])):
            sub.args.insert(0, sub.func.value)
            sub.func = ast.copy_location(ast.Name("_rooftop_cache_update", ast.Load()), sub.func)
            sub.keywords.append(ast.keyword("_rooftop_module", ast.Name(self_name, ast.Load())))
            found += 1
    return found


def _names(nodes, ctx) -> set[str]:
    """The names that `nodes` (syntax trees) load (ctx ast.Load) or assign (ast.Store)."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _rope_append_rewrite(node: ast.FunctionDef) -> int:
    """`q, k = apply_rotary_pos_emb(q0, k0, cos, sin)` (a statement of the body) followed, later in the body or first
    in an `if` of it, by `... = _rooftop_cache_update(<cache>, k, v, <layer_idx>, ...)` (_cache_update_rewrite's),
    where nothing between reads or assigns k, or assigns v, <cache> or the names of <layer_idx> (names and
    attributes only): the RoPE becomes
    `q, k, _rooftop_appended = _rooftop_rope_append(q0, k0, v, cos, sin, <cache>, <layer_idx>,
    _rooftop_module=self)` (the update's) and the update gets `_rooftop_appended=_rooftop_appended` (_rope_append).
    Returns 1 where it rewrote, else 0."""
    def rope_call(stmt):  # (q, k) where stmt is the RoPE statement
        value, target = getattr(stmt, "value", None), (stmt.targets[0] if isinstance(stmt, ast.Assign) else None)
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "apply_rotary_pos_emb"
                and len(value.args) == 4 and not value.keywords and all(isinstance(a, ast.Name) for a in value.args)
                and len(stmt.targets) == 1 and isinstance(target, ast.Tuple) and len(target.elts) == 2
                and all(isinstance(t, ast.Name) for t in target.elts)):
            return target.elts[0].id, target.elts[1].id
        return None

    def update_call(stmt):
        value = getattr(stmt, "value", None)
        if (isinstance(stmt, ast.Assign) and isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id == "_rooftop_cache_update" and len(value.args) >= 4):
            return value
        return None

    def plain(expr):  # a name or attributes of one
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        return isinstance(expr, ast.Name)

    for i, stmt in enumerate(node.body):
        names = rope_call(stmt)
        if names is None:
            continue
        between = []
        for later in node.body[i + 1:]:
            inner = later.body if isinstance(later, ast.If) else [later]
            found = next((j for j, sub in enumerate(inner) if update_call(sub) is not None), None)
            if found is None:
                between.append(later)
                continue
            between += inner[:found]
            call = update_call(inner[found])
            if isinstance(later, ast.If):
                between.append(later.test)
            cache, key, value, layer_idx = call.args[:4]
            if not (isinstance(key, ast.Name) and key.id == names[1] and isinstance(value, ast.Name)
                    and isinstance(cache, ast.Name) and plain(layer_idx)):
                return 0
            if names[1] in _names(between, ast.Load) or \
                    _names(between, ast.Store) & ({names[1], value.id, cache.id} | _names([layer_idx], ast.Load)):
                return 0
            rope = stmt.value
            stmt.targets[0].elts.append(ast.Name("_rooftop_appended", ast.Store()))
            stmt.value = ast.copy_location(ast.Call(ast.Name("_rooftop_rope_append", ast.Load()), [
                *rope.args[:2], ast.Name(value.id, ast.Load()), *rope.args[2:], ast.Name(cache.id, ast.Load()),
                layer_idx], [copy.deepcopy(k) for k in call.keywords if k.arg == "_rooftop_module"]), rope)
            call.keywords.append(ast.keyword("_rooftop_appended", ast.Name("_rooftop_appended", ast.Load())))
            return 1
        return 0
    return 0


def _decode_functions(functions, eager=None, prefill=None):
    """transformers' ALL_ATTENTION_FUNCTIONS as a patched attention forward sees it: a new instance of its class
    (transformers' AttentionInterface, a local mapping over the library-wide one) whose "sdpa" answers decode steps by
    rooftop.decode_attention and prefills (`prefill`) by rooftop.attention (_routed); where the forward's own `eager`
    attention function is gpt-oss's (it reads module.sinks: _sinks_eager) or Gemma 2's (soft-capped:
    _softcap_eager), its "eager" too, with the sinks or the cap; anything else as it was. An instance of
    transformers' own class, not a proxy: torch.compile traces it as it traces the original (a proxy's __getattr__
    broke dynamo). None where the object is not such an interface."""
    try:
        local = type(functions)()
        local.update(getattr(functions, "_local_mapping", {}))
        local["sdpa"] = _routed(functions["sdpa"], prefill=prefill)
    except (TypeError, KeyError):
        return None
    if _sinks_eager(eager) or _softcap_eager(eager):
        local["eager"] = _routed(eager, sinks_eager=_sinks_eager(eager), softcap_eager=_softcap_eager(eager),
                                 prefill=prefill)
    return local


def _same_code(fn, model: str) -> bool:
    """Whether `fn` compiles to the installed transformers' `model` eager_attention_forward (its bytecode, names and
    constants: a copy of it in another model's file, or a remote model's, is the same function)."""
    code = getattr(fn, "__code__", None)
    try:
        home = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
        known = home.eager_attention_forward.__code__
    except (ImportError, AttributeError):
        return False
    return code is not None and all(getattr(code, a) == getattr(known, a) for a in
                                    ("co_code", "co_names", "co_consts", "co_varnames", "co_argcount"))


def _sinks_eager(fn) -> bool:
    """Whether `fn` is gpt-oss's eager attention function (transformers 5.x: repeat_kv, the additive mask, module.sinks
    concatenated to the scores and dropped after the softmax), whose steps the kernels compute with its sinks."""
    return _same_code(fn, "gpt_oss")


def _softcap_eager(fn) -> bool:
    """Whether `fn` is Gemma 2's eager attention function (transformers 5.x: repeat_kv, the scores scaled, divided by
    its `softcap` argument, tanh, multiplied back where it is given, then the additive mask and the softmax; Gemma 3,
    3n, 4, VaultGemma, T5Gemma and others carry copies), whose steps the kernels compute with the cap (Gemma 2 has no
    SDPA in transformers: it soft-caps)."""
    return _same_code(fn, "gemma2")


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


def _source_function(fn: types.FunctionType) -> ast.FunctionDef | None:
    """fn's definition as a syntax tree (decorators and annotations dropped, line numbers those of its file), or None
    where its source is not at hand or it closes over names (super(), an enclosing function's)."""
    if fn.__code__.co_freevars:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__name__:
        return None
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    node.decorator_list, node.returns = [], None
    for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg):
        if arg is not None:
            arg.annotation = None
    return node


def _statement(code: str, where: ast.stmt) -> ast.stmt:
    """One statement parsed from `code`, at `where`'s place in the file (tracebacks point there)."""
    new = ast.parse(code).body[0]
    for sub in ast.walk(new):
        ast.copy_location(sub, where)
    return new


def _patched_forward(module: nn.Module, rewrite=None, rebind: dict | None = None) -> tuple[object, int]:
    """A bound forward for `module`: its class's forward (through any functools.wraps decorators) with `rebind`'s
    globals swapped in, and its body rewritten by `rewrite` (a function of the definition's syntax tree that changes it
    in place and returns how many changes it made); and that count. None when nothing changes, the forward's
    structure is not that, or the module has a forward of its own already."""
    forward = type(module).forward
    inner = inspect.unwrap(forward)
    if not isinstance(inner, types.FunctionType) or "forward" in vars(module):
        return None, 0
    node = _source_function(inner) if rewrite is not None else None
    changes = int(rewrite(node)) if node is not None else 0
    if not changes and not rebind:
        return None, 0
    namespace = {**inner.__globals__, **(rebind or {})}
    # torch.compile reads a function's globals from the module its __name__ names (and guards them there): without
    # one it reads, and guards, this namespace with its rebound names
    namespace.pop("__name__", None)
    if changes:
        defined: dict = {}
        exec(compile(ast.fix_missing_locations(ast.Module([node], [])), inner.__code__.co_filename, "exec"),
             namespace, defined)
        new = defined[node.name]
        new.__defaults__, new.__annotations__ = inner.__defaults__, dict(inner.__annotations__)
        new.__qualname__, new.__module__, new.__doc__ = inner.__qualname__, inner.__module__, inner.__doc__
    else:
        new = types.FunctionType(inner.__code__, namespace, inner.__name__, inner.__defaults__, inner.__closure__)
    new.__kwdefaults__ = inner.__kwdefaults__
    new = _rebound(forward, inner, new)
    return (types.MethodType(new, module), changes) if new is not None else (None, 0)


def _self_call(node: ast.AST, self_name: str, attrs=None) -> str | None:
    """The attribute name where `node` is `self.<attr>(<name>)` (attr one of `attrs`, or any where None), else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and (attrs is None or node.func.attr in attrs) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == self_name and len(node.args) == 1 and isinstance(node.args[0], ast.Name)
            and not node.keywords):
        return node.func.attr
    return None


class _Swap(ast.NodeTransformer):
    """Replaces the given nodes (by identity) with Name loads."""

    def __init__(self, names: dict[int, str]):
        self.names = names

    def visit(self, node):
        name = self.names.get(id(node))
        return ast.copy_location(ast.Name(name, ast.Load()), node) if name else self.generic_visit(node)


QKV = ("q_proj", "k_proj", "v_proj")


def _qkv_rewrite(node: ast.FunctionDef) -> int:
    """self.q_proj(x), self.k_proj(x) and self.v_proj(x) (each called once, in the body's statements, on one name x
    that none of the statements from the first call to the last assigns; the projections read nowhere else) become
    the three parts of one self.qkv_proj(x), split by self.qkv_sizes, computed before the first."""
    self_name = _self_name(node)
    calls: dict[str, list] = {}
    for i, stmt in enumerate(node.body):
        for sub in ast.walk(stmt):
            attr = _self_call(sub, self_name, QKV)
            if attr:
                calls.setdefault(attr, []).append((i, sub))
    if sorted(calls) != sorted(QKV) or any(len(found) != 1 for found in calls.values()):
        return 0
    uses = sum(isinstance(sub, ast.Attribute) and sub.attr in QKV and isinstance(sub.value, ast.Name)
               and sub.value.id == self_name for stmt in node.body for sub in ast.walk(stmt))
    if uses != len(QKV):  # a projection read otherwise too (Gemma 4's `if self.v_proj is not None`): kept apart
        return 0
    arg = {found[0][1].args[0].id for found in calls.values()}
    first, last = min(f[0][0] for f in calls.values()), max(f[0][0] for f in calls.values())
    if len(arg) != 1 or any(isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id in arg
                            for stmt in node.body[first:last + 1] for sub in ast.walk(stmt)):
        return 0
    names = {id(found[0][1]): f"_rooftop_{attr}" for attr, found in calls.items()}
    node.body[first:last + 1] = [_Swap(names).visit(stmt) for stmt in node.body[first:last + 1]]
    split = ", ".join(f"_rooftop_{attr}" for attr in QKV)
    node.body.insert(first, _statement(f"{split} = {self_name}.qkv_proj({arg.pop()}).split({self_name}.qkv_sizes, -1)",
                                       node.body[first]))
    return 1


@functools.lru_cache(maxsize=None)
def _forward_cache_facts(cls: type) -> tuple[bool, bool]:
    """For cls.forward (its source read once a class): whether it takes a cache (a parameter named as in CACHE_ARGS)
    and picks one of transformers' attention functions (its code names ALL_ATTENTION_FUNCTIONS), and whether it calls
    `<cache>.update(...)` on that cache."""
    inner = inspect.unwrap(cls.forward)
    node = _source_function(inner) if isinstance(inner, types.FunctionType) else None
    params = _cache_params(node) if node is not None else set()
    picks = bool(params) and "ALL_ATTENTION_FUNCTIONS" in inner.__code__.co_names
    return picks, bool(params) and any(_is_cache_update(sub, params) for sub in ast.walk(node))


def _own_cache(module: nn.Module) -> bool:
    """Whether `module` may keep a cache of its own: a layer_idx, and not reading another layer's
    (is_kv_shared_layer)."""
    return (isinstance(getattr(module, "layer_idx", None), int)
            and getattr(module, "is_kv_shared_layer", False) is not True)


def _causal_attention_by_call(module: nn.Module) -> bool:
    """A decoder's attention whatever its projections are named (GPT-NeoX's query_key_value, GPT-2's c_attn): its
    forward takes a cache and picks one of transformers' attention functions, and it is causal (not an encoder's or a
    cross attention: those are neither decode steps nor causal prefills) with a layer_idx."""
    return (getattr(module, "is_causal", False) is True and isinstance(getattr(module, "layer_idx", None), int)
            and _forward_cache_facts(type(module))[0])


def _routed_attention(module: nn.Module) -> bool:
    """An attention _attention_forward takes with a cache of its own (_own_cache): q_proj or qkv_proj, or
    _causal_attention_by_call."""
    return _own_cache(module) and (any(hasattr(module, name) for name in ("q_proj", "qkv_proj"))
                                   or _causal_attention_by_call(module))


def _attention_forward(module: nn.Module, merge_qkv: bool, decode: bool, kv_append: bool = True,
                       rope_append: bool = True, prefill: bool | None = None,
                       kv_scales=None) -> tuple[object, dict[str, int]]:
    """For an attention module (`q_proj`, `k_proj`, `v_proj`, or `qkv_proj`, or any projections where
    _causal_attention_by_call finds it by its forward): a forward of its own that calls rooftop.apply_rope where its
    forward calls its module's NeoX-layout `apply_rotary_pos_emb(q, k, cos, sin)` (a `rotate_half` beside it), and with
    merge_qkv computes q, k and v by one stacked projection (`qkv_proj`; the three are then removed). Returns the bound
    forward (None: nothing applies) and what it changed ({"rope": 0 / 1, "qkv": 0 / 1}). kv_scales (fp8 KV caches;
    patch_model's, checked there): where its static cache layers are appended to, the module's scales become
    rooftop_kv_scales (_fp8_layer)."""
    separate = all(hasattr(module, name) for name in QKV)
    # Gemma 3n's and Gemma 4's KV sharing: a layer without k / v projections that attends over another's keys and
    # values (its forward's cache update never runs): the attention functions only
    shared = (getattr(module, "is_kv_shared_layer", False) is True and hasattr(module, "q_proj")
              and hasattr(module, "store_full_length_kv"))
    if not (separate or shared or hasattr(module, "qkv_proj") or _causal_attention_by_call(module)):
        return None, {}
    inner = inspect.unwrap(type(module).forward)
    home = sys.modules.get(type(module).__module__)
    rope = inner.__globals__.get("apply_rotary_pos_emb") if isinstance(inner, types.FunctionType) else None
    if rope is None or rope is not getattr(home, "apply_rotary_pos_emb", None) or \
            not callable(getattr(home, "rotate_half", None)) or \
            list(inspect.signature(rope).parameters)[:4] != ["q", "k", "cos", "sin"]:
        rope = None
    form = _rope_form(rope) if rope is not None else None
    rope = rope if form is not None else None
    stacked = stacked_projection(*(getattr(module, name) for name in QKV)) if merge_qkv and separate else None
    rebind = {"apply_rotary_pos_emb": _fused_rotary(rope, form)} if rope is not None else {}
    functions = inner.__globals__.get("ALL_ATTENTION_FUNCTIONS") if isinstance(inner, types.FunctionType) else None
    local = (_decode_functions(functions, inner.__globals__.get("eager_attention_forward"), prefill)
             if decode and hasattr(functions, "get_interface") else None)
    decoding = local is not None
    if decoding:
        rebind["ALL_ATTENTION_FUNCTIONS"] = local
    fp8 = kv_scales is not None and decoding
    changed = {}

    def rewrite(node):
        if shared:
            return 0
        changed["qkv"] = _qkv_rewrite(node) if stacked is not None else 0
        global _static_classes
        _static_classes = _static_classes or _known_static_classes()
        known = kv_append and _static_classes is not None
        codes = changed["fp8"] = fp8 and _cache_rows_only_attended(node)  # (before the update's rewrite)
        changed["kv_append"] = min(1, _cache_update_rewrite(node)) if known else 0
        if changed["kv_append"]:  # (the namespace is built after the rewrite)
            rebind["_rooftop_cache_update"] = functools.partial(_cache_update, _rooftop_fp8=codes)
        fuse = rope_append and changed["kv_append"] and rope is not None
        changed["rope_append"] = _rope_append_rewrite(node) if fuse else 0
        if changed["rope_append"]:
            rebind["_rooftop_rope_append"] = _rope_append(rebind["apply_rotary_pos_emb"], form, codes)
        return changed["qkv"] + changed["kv_append"]

    forward, _ = _patched_forward(module, rewrite, rebind)
    if forward is None:
        return None, {}
    merged = changed.get("qkv", 0)
    if merged:
        module.qkv_sizes = [getattr(module, name).out_features for name in QKV]
        module.qkv_proj = stacked
        for name in QKV:
            delattr(module, name)
    if changed.get("fp8") and changed.get("kv_append"):
        if isinstance(kv_scales, dict) and getattr(module, "layer_idx", None) not in kv_scales:
            raise ValueError(f"kv_scales is a dict by layer_idx, but {type(module).__name__} appends to a cache "
                             "without a layer_idx of it: give one pair for all")
        module.rooftop_kv_scales = kv_scales[module.layer_idx] if isinstance(kv_scales, dict) else kv_scales
    return forward, {"rope": int(rope is not None), "qkv": merged, "decode_attention": int(decoding),
                     "kv_append": changed.get("kv_append", 0), "rope_append": changed.get("rope_append", 0)}


def _add_norm_rewrite(module: nn.Module, fused: list):
    """The rewrite (for _patched_forward) of a decoder layer's `h = r + h; r = h; h = self.<norm>(h)` (or h + r),
    self.<norm> one of rooftop's RMSNorm or LayerNorm, into `h, r = self.<norm>(h, residual=r)`: the add in the
    norm's kernel (vLLM's fused_add_rms_norm). Where the norm is an RMSNorm and the next statement is
    `h = self.<mlp>(h)`, self.<mlp> a GatedMLP, the norm also gets `quant=self.<mlp>.input_quant`: for an fp8 MLP
    (read at each call) it hands the MLP its rows quantized, no quantize_rows kernel between them. Returns the number
    of such sequences it found; appends each one's kind ("add_rms_norm", "add_layer_norm") to `fused`."""
    def rewrite(node: ast.FunctionDef) -> int:
        self_name = _self_name(node)
        found, i = 0, 0
        while i + 2 < len(node.body):
            add, keep, norm = node.body[i:i + 3]
            pair = _add_norm_names(add, keep, norm, self_name, module)
            if pair:
                h, r, attr = pair
                rms = isinstance(getattr(module, attr), RMSNorm)
                mlp = _gated_mlp_call(node.body[i + 3] if i + 3 < len(node.body) else None, h, self_name, module)
                quant = f", quant={self_name}.{mlp}.input_quant" if mlp and rms else ""
                fused.append("add_rms_norm" if rms else "add_layer_norm")
                node.body[i:i + 3] = [_statement(f"{h}, {r} = {self_name}.{attr}({h}, residual={r}{quant})", add)]
                found += 1
            i += 1
        return found
    return rewrite


def _gated_mlp_call(stmt, h, self_name, module) -> str | None:
    """The attribute name where `stmt` is `h = self.<attr>(h)`, self.<attr> a GatedMLP, else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == h):
        return None
    attr = _self_call(stmt.value, self_name)
    return attr if attr and stmt.value.args[0].id == h and isinstance(getattr(module, attr, None), GatedMLP) else None


def _add_norm_names(add, keep, norm, self_name, module) -> tuple[str, str, str] | None:
    """(h, r, norm's attribute) where the three statements are `h = r + h` (or h + r; either may be passed through a
    dropout of p = 0 or an nn.Identity), `r = h`, `h = self.norm(h)`."""
    def assigned(stmt):  # (target name, value) of `name = value`
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return stmt.targets[0].id, stmt.value
        return None, None

    def operand(side):  # the name in `side`: `name`, or `self.<drop>(name)` of a dropout that keeps it (Phi-3's)
        attr = _self_call(side, self_name)
        drop = getattr(module, attr, None) if attr else None
        if isinstance(drop, nn.Identity) or (isinstance(drop, nn.Dropout) and drop.p == 0):
            side = side.args[0]
        return side.id if isinstance(side, ast.Name) else None

    h, total = assigned(add)
    if not (isinstance(total, ast.BinOp) and isinstance(total.op, ast.Add)):
        return None
    summed = {operand(total.left), operand(total.right)}
    if None in summed:
        return None
    r = (summed - {h}).pop() if h in summed and len(summed) == 2 else None
    kept, value = assigned(keep)
    normed, call = assigned(norm)
    attr = _self_call(call, self_name)
    if (r is None or kept != r or not (isinstance(value, ast.Name) and value.id == h) or normed != h
            or attr is None or call.args[0].id != h
            or not isinstance(getattr(module, attr, None), (RMSNorm, LayerNorm))):
        return None
    return h, r, attr


def patch_model(model: nn.Module, merge_gate_up: bool = True, merge_qkv: bool = True,
                decode_attention: bool = True, kv_append: bool = True, rope_append: bool = True,
                prefill_attention: bool | None = None, kv_cache_dtype: str | None = None,
                kv_scales=None) -> dict[str, int]:
    """Swap in rooftop's fused modules and forwards in place; returns how many of each were replaced. merge_gate_up:
    an MLP's gate and up projections become one (`GatedMLP`), where they can; merge_qkv: an attention's q, k and v
    projections (`qkv_proj`); decode_attention: an attention's SDPA decode steps by rooftop.decode_attention (the
    count of attention functions so routed); prefill_attention (with decode_attention): its SDPA prefills by
    rooftop.attention where they are causal or dense, or under a mask causal within a window (None: 16-bit heads of
    64, 128 or 256 on sm_90 GPUs, where that was measured faster than SDPA's default backend; others keep SDPA), and
    gpt-oss's eager prefills with their sinks (None: always; False keeps the eager function's);
    kv_append: a static cache layer's update by rooftop.append_kv; rope_append: with kv_append, an attention's RoPE
    and that update as one kernel (rooftop.apply_rope_append_kv) where its RoPE is followed by the update;
    kv_cache_dtype "fp8" (with decode_attention and kv_append): those static cache layers hold fp8 codes from their
    first update on (the module docstring), at kv_scales: None (1.0 for keys and values, vLLM's default), a
    (k_scale, v_scale) pair of positive floats for every layer, a dict {layer_idx: (k_scale, v_scale)} for each (a
    checkpoint's calibrated scales), or "prefill": each attention's own from the first rows appended to its cache
    (vLLM's calculate_kv_scales, KV_CALIBRATION_RANGE: a host sync, so that first prefill runs eager or compiled
    without fullgraph), kept for later caches; a layer's scales are its attention module's `rooftop_kv_scales`, and a
    cache layer of codes at other scales is refused (_fp8_layer); attentions that read another layer's keys and values
    (Gemma 3n's and Gemma 4's KV sharing) read its codes at its scales (_kv_sharing_sources). The model's forward gets
    two hooks (_forward_begins / _forward_ends): its layers share what they read from a mask made under inference
    mode (_once_per_mask) for the length of one forward."""
    if kv_cache_dtype not in (None, "fp8"):
        raise ValueError(f'kv_cache_dtype must be None or "fp8", got {kv_cache_dtype!r}')
    if kv_cache_dtype and not (decode_attention and kv_append):
        raise ValueError('kv_cache_dtype="fp8" needs decode_attention and kv_append: the caches\' fp8 codes are '
                         "written by rooftop.append_kv and read by rooftop.decode_attention")
    kv_scales = _checked_kv_scales(model, kv_scales) if kv_cache_dtype else _no_kv_scales(kv_scales)
    sources = _kv_sharing_sources(model) if kv_cache_dtype else {}  # (checked before anything changes)
    counts = _patch_tree(model, merge_gate_up, merge_qkv, decode_attention, kv_append, rope_append, prefill_attention,
                         kv_scales)
    for shared, source in sources.items():
        if "forward" not in vars(shared) or "forward" not in vars(source):  # (the check above makes this rare)
            raise ValueError(f'kv_cache_dtype="fp8": {type(shared).__name__} (layer_idx '
                             f"{getattr(shared, 'layer_idx', None)}) or the layer whose keys and values it reads was "
                             "not patched to read fp8 codes")
        shared.__dict__["_rooftop_kv_source"] = source
    _warn_unrouted_caches(model, kv_cache_dtype)
    if not getattr(model, "_rooftop_forward_hooks", False):
        model.register_forward_pre_hook(_forward_begins)
        model.register_forward_hook(_forward_ends, always_call=True)
        model._rooftop_forward_hooks = True
    return counts


def _warn_unrouted_caches(model: nn.Module, kv_cache_dtype) -> None:
    """kv_cache_dtype="fp8": one warning naming the attentions with a cache of their own (a layer_idx, not sharing
    another's) whose forwards append to it other than through _cache_update with fp8 (their cache update or attention
    function not found in their source, an unknown transformers' StaticLayer, the cache's rows read elsewhere:
    _cache_rows_only_attended): their caches keep the model's dtype."""
    if kv_cache_dtype is None:
        return
    kept = [m for m in model.modules() if getattr(m, "rooftop_kv_scales", None) is None and (
        _routed_attention(m) or _own_cache(m) and _forward_cache_facts(type(m))[1])]  # (Falcon's: SDPA called itself)
    if kept:
        names = sorted({type(m).__name__ for m in kept})
        warnings.warn(f'kv_cache_dtype="fp8": {len(kept)} attention layers ({", ".join(names)}; layer_idx '
                      f"{sorted(m.layer_idx for m in kept)}) keep their caches in the model's dtype: their forwards' "
                      "cache updates or attention functions could not be routed to rooftop's, or the forwards read "
                      "the cache's rows outside their attention function", stacklevel=3)


def _kv_sharing_sources(model: nn.Module) -> dict:
    """{sharing attention: its source} for fp8 caches: each attention marked is_kv_shared_layer (Gemma 3n's, Gemma
    4's) reads the codes of the last layer before it of its layer_type that stores its keys and values for them
    (store_full_length_kv, with k / v projections of its own), and takes that layer's scales: patch_model keeps it as
    the sharing layer's _rooftop_kv_source (outside the module tree: a plain attribute, which a deep copy maps to the
    copy's layer). Refused where there is none (e.g. a Gemma 4 assistant, which reads another model's)."""
    stores, sources = {}, {}
    for m in model.modules():
        if getattr(m, "store_full_length_kv", False) is True and (
                all(hasattr(m, name) for name in QKV) or hasattr(m, "qkv_proj")):
            stores[getattr(m, "layer_type", None)] = m
        elif getattr(m, "is_kv_shared_layer", False) is True:
            source = stores.get(getattr(m, "layer_type", None))
            if source is None:
                raise ValueError(f'kv_cache_dtype="fp8" does not cover {type(m).__name__} (layer_idx '
                                 f"{getattr(m, 'layer_idx', None)}): it reads another layer's cache rows, and no "
                                 "layer before it of its layer_type stores them (store_full_length_kv)")
            sources[m] = source
    return sources


def _no_kv_scales(kv_scales) -> None:
    if kv_scales is not None:
        raise ValueError(f'kv_scales is for kv_cache_dtype="fp8" caches, got {kv_scales!r} without it')


def _checked_kv_scales(model: nn.Module, kv_scales):
    """patch_model's kv_scales as _attention_forward takes it: "prefill", a (k_scale, v_scale) pair of floats, or a
    dict of them by layer_idx, one for each attention patch_model routes with a cache of its own (_routed_attention;
    those without a layer_idx, a vision tower's, append to no cache; a sharing layer reads another's codes) and no
    other."""
    def pair(name, value):
        if not (isinstance(value, (tuple, list)) and len(value) == 2):
            raise ValueError(f'{name} must be a (k_scale, v_scale) pair of positive finite floats (kv_scales: None, '
                             f'"prefill", such a pair or a dict of them by layer_idx), got {value!r}')
        return tuple(check_fp8_scale(f"{name}[{i}]", x) for i, x in enumerate(value))

    if kv_scales is None or isinstance(kv_scales, str) and kv_scales == "prefill":
        return (1.0, 1.0) if kv_scales is None else kv_scales
    if not isinstance(kv_scales, dict):
        return pair("kv_scales", kv_scales)
    scales = {i: pair(f"kv_scales[{i!r}]", value) for i, value in kv_scales.items()}
    wanted = {m.layer_idx for m in model.modules() if _routed_attention(m)}
    if wanted != set(scales):
        raise ValueError(f"kv_scales must hold scales for exactly the model's layers {sorted(wanted)}; missing "
                         f"{sorted(wanted - set(scales))}, unknown {sorted(set(scales) - wanted, key=repr)} (a layer "
                         "sharing another's keys and values reads that one's)")
    return scales


def _patch_tree(model: nn.Module, merge_gate_up, merge_qkv, decode_attention, kv_append, rope_append,
                prefill_attention, kv_scales=None) -> dict[str, int]:
    """patch_model's swaps in `model` and its children (patch_model's arguments); returns their counts."""
    counts = {"rms_norm": 0, "add_rms_norm": 0, "layer_norm": 0, "add_layer_norm": 0, "gated_mlp": 0,
              "moe_experts": 0, "qkv": 0, "rope": 0, "decode_attention": 0, "kv_append": 0, "rope_append": 0}
    forward, changed = _attention_forward(model, merge_qkv, decode_attention, kv_append, rope_append,
                                          prefill_attention, kv_scales)
    if forward is not None:
        model.forward = forward
        for key, n in changed.items():
            counts[key] += n
    for name, child in list(model.named_children()):
        new, kind = _rms_norm(child), "rms_norm"
        if new is None:
            new, kind = _layer_norm(child), "layer_norm"
        if new is None:
            new, kind = _gated_mlp(child, merge_gate_up), "gated_mlp"
        if new is None:
            new, kind = _moe_experts(child), "moe_experts"
        if new is None:
            for key, n in _patch_tree(child, merge_gate_up, merge_qkv, decode_attention, kv_append,
                                      rope_append, prefill_attention, kv_scales).items():
                counts[key] += n
            continue
        setattr(model, name, new)
        counts[kind] += 1
    if any(isinstance(child, (RMSNorm, LayerNorm)) for child in model.children()):  # a decoder layer: its adds
        fused: list[str] = []
        forward, _ = _patched_forward(model, _add_norm_rewrite(model, fused))
        if forward is not None:
            model.forward = forward
            for kind in fused:
                counts[kind] += 1
    return counts
