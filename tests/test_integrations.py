"""Patching Hugging Face Llama-style models: module swaps found by duck typing, same outputs."""
import copy
import inspect
import warnings
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from conftest import DEVICE, HAS_CUDA, rel_err
import rooftop.integrations.hf
from rooftop.integrations.hf import GatedMLP, patch_model
from rooftop.nn import LayerNorm, RMSNorm
from rooftop.ops.decode_attention import quantize_kv


def swaps(**counts) -> dict:
    """patch_model's counts: `counts`, every other kind 0."""
    return {kind: counts.get(kind, 0) for kind in ("rms_norm", "add_rms_norm", "layer_norm", "add_layer_norm",
                                                  "gated_mlp", "moe_experts", "qkv", "rope", "decode_attention",
                                                  "kv_append", "rope_append")}


# a Llama-style model of 2 layers: each layer's two norms and the final one, its fused add + norm, gated MLP, stacked
# q / k / v, RoPE, decode attention, cache append with the RoPE
LLAMA_COUNTS = swaps(rms_norm=5, add_rms_norm=2, gated_mlp=2, qkv=2, rope=2, decode_attention=2, kv_append=2,
                     rope_append=2)


class LlamaRMSNorm(nn.Module):  # as transformers writes it
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.variance_epsilon = eps

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * xf.to(x.dtype)


class GemmaRMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) - 0.5)

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight.float())).to(x.dtype)


class LlamaMLP(nn.Module):
    def __init__(self, hidden, inter, act):
        super().__init__()
        self.gate_proj, self.up_proj = nn.Linear(hidden, inter, bias=False), nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act_fn = act

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, norm, hidden=64, inter=96, act=None):
        super().__init__()
        self.input_layernorm = norm(hidden)
        self.mlp = LlamaMLP(hidden, inter, act or nn.SiLU())
        self.post_attention_layernorm = norm(hidden)

    def forward(self, x):
        x = x + self.mlp(self.input_layernorm(x))
        return self.post_attention_layernorm(x)


class Attention(nn.Module):  # q, k and v projected from one input, as transformers' attention modules do
    def __init__(self, hidden=64, kv=32, bias=False):
        super().__init__()
        self.q_proj, self.o_proj = nn.Linear(hidden, hidden, bias=bias), nn.Linear(hidden, hidden, bias=bias)
        self.k_proj, self.v_proj = nn.Linear(hidden, kv, bias=bias), nn.Linear(hidden, kv, bias=bias)

    def forward(self, hidden_states):
        query = self.q_proj(hidden_states)
        key = self.k_proj(hidden_states)
        value = self.v_proj(hidden_states).view(*hidden_states.shape[:-1], 2, -1)
        return self.o_proj(query * key.sum(-1, keepdim=True) + value.mean(-2).repeat(1, 1, 4))


class DecoderLayer(nn.Module):  # transformers' LlamaDecoderLayer's residual pattern
    def __init__(self, hidden=64, inter=96):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = LlamaRMSNorm(hidden), LlamaRMSNorm(hidden)
        self.self_attn, self.mlp = Attention(hidden), LlamaMLP(hidden, inter, nn.SiLU())

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = residual + hidden_states
        # the fused add + norm takes the three statements from here
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


@pytest.mark.parametrize("norm, act", [(LlamaRMSNorm, nn.SiLU()), (GemmaRMSNorm, nn.GELU(approximate="tanh"))])
def test_patch_swaps_norms_and_mlps_and_keeps_outputs(norm, act):
    model = nn.Sequential(Layer(norm, act=act), Layer(norm, act=act)).to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert patch_model(model) == swaps(rms_norm=4, gated_mlp=2)
        assert isinstance(model[0].input_layernorm, RMSNorm) and isinstance(model[1].mlp, GatedMLP)
        assert model[0].mlp.activation == ("silu" if isinstance(act, nn.SiLU) else "gelu_tanh")
        assert model[0].mlp.gate_up_proj.weight.shape == (2 * 96, 64) and not hasattr(model[0].mlp, "gate_proj")
        assert rel_err(model(x), before) < 1e-5


@pytest.mark.parametrize("bias", [False, True])
def test_gate_and_up_stacked_or_kept_apart(bias):
    """gate and up as one projection: the concatenated weights (and biases), the same outputs as apart; kept
    apart when asked, or when they cannot stack (of different dtypes)."""
    mlp = LlamaMLP(64, 96, nn.SiLU()).to(DEVICE)
    if bias:
        mlp.gate_proj.bias, mlp.up_proj.bias = nn.Parameter(torch.randn(96)), nn.Parameter(torch.randn(96))
        mlp.to(DEVICE)
    x = torch.randn(3, 64, device=DEVICE)
    stacked = GatedMLP(mlp.gate_proj, mlp.up_proj, mlp.down_proj, "silu")
    apart = GatedMLP(mlp.gate_proj, mlp.up_proj, mlp.down_proj, "silu", merge=False)
    assert torch.equal(stacked.gate_up_proj.weight, torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]))
    assert (stacked.gate_up_proj.bias is None) == (not bias) and apart.gate_up_proj is None
    with torch.no_grad():
        assert rel_err(stacked(x), mlp(x)) < 1e-5 and rel_err(apart(x), mlp(x)) < 1e-5
    mlp.up_proj.half()
    assert rooftop.integrations.hf.stacked_projection(mlp.gate_proj, mlp.up_proj) is None


def test_quantized_gate_and_up_stack_exactly():
    """Two QuantLinear of one format stack into one whose weight is the two dequantized weights stacked (bit for
    bit) and whose output is theirs side by side; of different formats they do not stack, and stacked() says why."""
    from rooftop.ops.quant_matmul import QuantLinear

    gate, up = (nn.Linear(256, n, bias=True).to(DEVICE).bfloat16() for n in (96, 160))
    qgate, qup = (QuantLinear.from_linear(m, 4, 128) for m in (gate, up))
    both = rooftop.integrations.hf.stacked_projection(qgate, qup)
    assert both.out_features == 256 and torch.equal(
        both.qweight.dequantize(), torch.cat([qgate.qweight.dequantize(), qup.qweight.dequantize()]))
    x = torch.randn(5, 256, device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        assert rel_err(both(x), torch.cat([qgate(x), qup(x)], -1)) < 1e-2
    other = QuantLinear.from_linear(up, 8, 128)
    assert rooftop.integrations.hf.stacked_projection(qgate, other) is None
    with pytest.raises(ValueError, match="bits"):
        QuantLinear.stacked(qgate, other)


def test_fp8_model_mlp_quantizes_in_its_activation(monkeypatch):
    """After quantize_model(model, "fp8") and patch_model, an MLP's gate and up are one Fp8Linear and its activation
    hands the down projection fp8 rows with their scales (swiglu(..., quant="fp8"): no quantize_rows for it); the
    layers' output within fp8's precision of the bf16 model's."""
    from rooftop import quantize_model
    from rooftop.ops import _support, activations
    from rooftop.ops.matmul import Fp8Linear
    model = nn.Sequential(Layer(LlamaRMSNorm), Layer(LlamaRMSNorm)).to(DEVICE).bfloat16()
    x = torch.randn(2, 5, 64, device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        before = model(x)
        assert len(quantize_model(model, bits="fp8")["quantized"]) == 2 * 3
        patch_model(model)
        assert isinstance(model[0].mlp.gate_up_proj, Fp8Linear) and model[0].mlp.gate_up_proj.out_features == 2 * 96
        calls = []
        monkeypatch.setattr(_support, "PLANS_ENABLED", False)  # every call its full path, to be counted
        real = activations._gated_quant_op
        monkeypatch.setattr(activations, "_gated_quant_op", lambda *a: calls.append(a[2:]) or real(*a))
        assert rel_err(model(x), before) < 0.15
    assert calls.count(("silu", "fp8")) == 2 and calls.count(("none", "fp8")) == 2  # the fused MLPs; gate_up's input


def test_patch_leaves_what_it_does_not_know():
    layer = Layer(LlamaRMSNorm, act=nn.ReLU()).to(DEVICE)  # ReLU gating: no fused kernel
    assert patch_model(layer) == swaps(rms_norm=2)
    assert isinstance(layer.mlp, LlamaMLP)


def _tiny_llama(attn: str | None = "sdpa"):
    """(transformers, config, model): a random 2-layer Llama (4 query / 2 kv heads of 16) on DEVICE in eval mode, its
    attention `attn` (None: transformers' default)."""
    transformers = pytest.importorskip("transformers")  # in requirements-cpu.txt and on the GPU machine
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    if attn is not None:
        config._attn_implementation = attn
    return transformers, config, transformers.LlamaForCausalLM(config).to(DEVICE).eval()


def test_patch_a_transformers_llama():
    transformers, _, model = _tiny_llama(None)
    stock = copy.deepcopy(model)
    ids = torch.randint(0, 128, (2, 12), device=DEVICE)
    tol = 1e-2 if HAS_CUDA else 1e-4
    with torch.no_grad():
        before = model(ids).logits
        counts = patch_model(model)
        assert counts == LLAMA_COUNTS
        assert rel_err(model(ids).logits, before) < tol
        # a decode step from a cache: rotations at positions 12.. (cos/sin [B, 1, D])
        for m in (stock, model):
            out = m(ids, use_cache=True)
            m.step = m(ids[:, -1:], past_key_values=out.past_key_values, use_cache=True).logits
        assert rel_err(model.step, stock.step) < tol
    calls = []
    rotary = transformers.models.llama.modeling_llama.apply_rotary_pos_emb
    rope = rooftop.integrations.hf.apply_rope
    try:  # the patched forward calls rooftop's rope, the unpatched copy Hugging Face's
        rooftop.integrations.hf.apply_rope = lambda *a, **k: calls.append("rooftop") or rope(*a, **k)
        transformers.models.llama.modeling_llama.apply_rotary_pos_emb = lambda *a: calls.append("hf") or rotary(*a)
        with torch.no_grad():
            stock(ids)
            assert calls == ["hf"] * 2
            model(ids)
            assert calls[2:] == ["rooftop"] * 2
    finally:
        rooftop.integrations.hf.apply_rope = rope
        transformers.models.llama.modeling_llama.apply_rotary_pos_emb = rotary


@pytest.mark.parametrize("unfused", [False, True], ids=["rope_append", "append"])
def test_decode_steps_over_a_static_cache_take_decode_attention(unfused, monkeypatch):
    """A left-padded batch decoding from transformers' StaticCache: the patched model's decode steps call
    rooftop.decode_attention (the boolean mask as a key mask, lengths and bounds from it: each sequence's mask one range
    of keys, the padded one's from its fifth) and append the step's keys and values
    with the RoPE (or apart where the RoPE kernel does not take the call: unfused), and give the stock model's logits;
    its prefill stays SDPA's; with decode_attention=False SDPA throughout."""

    if unfused:
        monkeypatch.setattr(rooftop.integrations.hf._RopeForm, "takes", lambda *a: False)

    transformers, config, stock = _tiny_llama()
    models = {"stock": stock, "patched": copy.deepcopy(stock), "sdpa": copy.deepcopy(stock)}
    assert patch_model(models["patched"])["decode_attention"] == 2  # the default
    assert patch_model(models["sdpa"], decode_attention=False, kv_append=False) == {
        **LLAMA_COUNTS, "decode_attention": 0, "kv_append": 0, "rope_append": 0}
    calls = []
    real = rooftop.integrations.hf.decode_attention
    monkeypatch.setattr(rooftop.integrations.hf, "decode_attention",
                        lambda *a, **k: calls.append(k["mask_bounds"].tolist()) or real(*a, **k))
    appends = []
    for name in ("append_kv", "apply_rope_append_kv"):  # (name, calls) by either
        real_append = getattr(rooftop.integrations.hf, name)
        monkeypatch.setattr(rooftop.integrations.hf, name,
                            lambda *a, name=name, real=real_append, **k: appends.append(name) or real(*a, **k))
    ids = torch.randint(0, 128, (2, 10), device=DEVICE)
    steps = torch.randint(0, 128, (3, 2, 1), device=DEVICE)
    padding = torch.ones(2, 10, dtype=torch.long, device=DEVICE)
    padding[1, :4] = 0  # the second sequence left-padded
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    logits = {}
    with torch.no_grad():
        for name, model in models.items():
            cache = transformers.StaticCache(config=config, max_cache_len=24)
            mask, positions = padding, (padding.cumsum(-1) - 1).clamp_min(0)
            model(ids, attention_mask=mask, position_ids=positions, use_cache=True, **{cache_arg: cache})
            before, appended = len(calls), len(appends)
            logits[name] = []
            for token in steps:
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
                positions = positions[:, -1:] + 1
                logits[name].append(model(token, attention_mask=mask, position_ids=positions, use_cache=True,
                                          **{cache_arg: cache}).logits)
            assert calls[before:] == ([[[0, 1], [4, 1]]] * 2 * len(steps) if name == "patched" else []), name
            # the cache's rows appended with the RoPE by rooftop.apply_rope_append_kv from the first step on (the
            # prefill initialises the cache), or by rooftop.append_kv where the RoPE kernel does not take the call
            way = "append_kv" if unfused else "apply_rope_append_kv"
            assert appends[appended:] == ([way] * 2 * len(steps) if name == "patched" else []), name
    for name in ("patched", "sdpa"):
        for ours, theirs in zip(logits[name], logits["stock"]):
            assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)


@pytest.mark.parametrize("family", ["Gemma3n", "Gemma4"])
def test_kv_sharing(family):
    """Gemma 3n's and Gemma 4's KV sharing (their last layers of each type attend over the keys and values the last
    earlier layer of that type stores, with no k / v projections of their own): patched, the sharing layers' decode
    steps also go to rooftop.decode_attention, over 16-bit caches (the stock logits; Gemma 4's q / k / v projections
    kept apart: its forward reads `self.v_proj is not None`) and over fp8 codes, which they read at the scales the
    storing layer wrote them at (a dict giving the full layer keys at 4.0 and values at 0.5: read at 1.0 the logits
    would be far off); a deep copy's sharing layer reads its own copy's storing layer."""
    transformers = pytest.importorskip("transformers")
    extra = (dict(altup_num_inputs=2, laurel_rank=4, activation_sparsity_pattern=[0.0] * 4) if family == "Gemma3n"
             else dict(global_head_dim=512))  # (Gemma 4's full layers' heads: to decode_attention too)
    config = getattr(transformers, f"{family}TextConfig")(
        vocab_size=128, vocab_size_per_layer_input=128, hidden_size=64, hidden_size_per_layer_input=8,
        intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        num_kv_shared_layers=2, layer_types=["sliding_attention", "full_attention"] * 2, sliding_window=8,
        max_position_embeddings=64, **extra)
    config._attn_implementation = "sdpa"
    stock = getattr(transformers, f"{family}ForCausalLM")(config).to(DEVICE).eval()
    attentions = [layer.self_attn for layer in stock.model.layers]
    assert [(a.is_kv_shared_layer, a.store_full_length_kv) for a in attentions] == [(False, True)] * 2 + [
        (True, False)] * 2
    models = {"stock": stock, "patched": copy.deepcopy(stock), "fp8": copy.deepcopy(stock)}
    counts = patch_model(models["patched"])
    assert counts["decode_attention"] == 4 and counts["kv_append"] == 2  # the sharing layers append to no cache
    assert counts["qkv"] == (2 if family == "Gemma3n" else 0)
    with pytest.raises(ValueError, match=r"exactly the model's layers \[0, 1\]"):  # not the sharing ones
        patch_model(copy.deepcopy(stock), kv_cache_dtype="fp8", kv_scales={i: (1.0, 1.0) for i in range(4)})
    patch_model(models["fp8"], kv_cache_dtype="fp8", kv_scales={0: (1.0, 1.0), 1: (4.0, 0.5)})
    fp8_layers = [layer.self_attn for layer in models["fp8"].model.layers]
    assert fp8_layers[3].__dict__["_rooftop_kv_source"] is fp8_layers[1]
    models["copy"] = copy.deepcopy(models["fp8"])
    copied = [layer.self_attn for layer in models["copy"].model.layers]
    assert copied[3].__dict__["_rooftop_kv_source"] is copied[1]
    calls = []
    real = rooftop.integrations.hf.decode_attention
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rooftop.integrations.hf, "decode_attention",
                   lambda q, k, *a, **kw: calls.append((k.dtype, kw["k_scale"], kw["v_scale"])) or real(q, k, *a, **kw))
        ids = torch.randint(0, 128, (2, 10), device=DEVICE)
        steps = torch.randint(0, 128, (2, 2, 1), device=DEVICE)
        cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
        logits = {}
        with torch.no_grad():
            for name, model in models.items():
                cache = {cache_arg: transformers.StaticCache(config=config, max_cache_len=24)}
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    model(ids, use_cache=True, **cache)
                    before = len(calls)
                    logits[name] = [model(token, use_cache=True, **cache).logits for token in steps]
                kept = [str(w.message) for w in seen if "keeps its cache" in str(w.message)]
                if name in ("fp8", "copy"):  # the full layers (1, 3) over codes at layer 1's scales
                    assert cache[cache_arg].layers[1].keys.dtype == torch.float8_e4m3fn
                    full = (torch.float8_e4m3fn, 4.0, 0.5)
                    assert calls[before:before + 4] == [(torch.float32, None, None), full] * 2
                    # the sliding layer's cache stays float32, said once (layer 2 shares it, appending nothing)
                    assert len(kept) == 1 and "its cache layer is a StaticSlidingWindowLayer" in kept[0]
                else:
                    assert kept == []
    assert len(calls) == 3 * 4 * len(steps)
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)
    for name in ("fp8", "copy"):  # e4m3's rounding: Gemma 3n 1.8-2.7e-2 seen on the CPU at equal scales (5.04e-2
        # once); Gemma 4's tiny model amplifies it (7.6-7.8e-2 with no sharing layer at all)
        for ours, theirs in zip(logits[name], logits["stock"]):
            assert rel_err(ours, theirs) < (0.08 if family == "Gemma3n" else 0.2)


@pytest.mark.parametrize("rope_append", [True, False], ids=["rope_append", "apart"])
def test_fp8_kv_cache_scales(rope_append):
    """patch_model(kv_cache_dtype="fp8", kv_scales=...): keys and values 3000x (q and o_proj's weights / 3000, so the
    stock model computes the same) lie past e4m3's 448: at scale 1.0 they saturate and the logits go astray; scales
    calibrated from the prefill's rotated rows (vLLM's amax / 200 and / 100, each attention's own) or given keep them
    within e4m3's rounding, the prompt's codes quantize_kv's at them: on a cache initialised ahead (as generate's
    chunked prefill does; appended with the RoPE, rope_append, or apart), on a second cache of other tokens made by
    its first update (the calibrated scales kept), after its reset() (a prefill over codes: their 16-bit copy at the
    scales), in a deep copy of the model (its own scales) on a cache initialised ahead in fp8. A cache of codes read
    at other scales than it was written at: an error."""
    transformers, config, stock = _tiny_llama()
    with torch.no_grad():
        for layer in stock.model.layers:
            for name, factor in (("k_proj", 3000), ("q_proj", 1 / 3000), ("v_proj", 3000), ("o_proj", 1 / 3000)):
                getattr(layer.self_attn, name).weight.mul_(factor)
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    prompts = [torch.randint(0, 128, (2, 10), device=DEVICE) for _ in range(2)]
    steps = torch.randint(0, 128, (2, 2, 1), device=DEVICE)

    def decode(model, ids, cache=None, ahead=None):
        if cache is None:
            cache = transformers.StaticCache(config=config, max_cache_len=16)
            if ahead is not None:
                cache.early_initialization(2, config.num_key_value_heads, 16, ahead, ids.device)
        mask, logits = torch.ones_like(ids), []
        with torch.no_grad():
            model(ids, attention_mask=mask, use_cache=True, **{cache_arg: cache})
            for token in steps:
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
                logits.append(model(token, attention_mask=mask, use_cache=True, **{cache_arg: cache}).logits)
        return cache, logits

    expect = [decode(stock, ids) for ids in prompts]
    calibrated = [[(layer.keys[:, :, :10].abs().amax().item() / 200, layer.values[:, :, :10].abs().amax().item() / 100)
                   for layer in cache.layers] for cache, _ in expect]
    cases = [(8.0, 16.0), "prefill"] + ([None] if rope_append else [])  # (a dict: test_fp8_kv_cache_scales_checks)
    for kv_scales in cases:
        model = copy.deepcopy(stock)
        patch_model(model, rope_append=rope_append, kv_cache_dtype="fp8", kv_scales=kv_scales)
        attentions = [layer.self_attn for layer in model.model.layers]
        twin = copy.deepcopy(model)  # before any cache: calibrates on its own
        cache, got = decode(model, prompts[0], ahead=torch.float32)
        errors = [rel_err(ours, theirs) for ours, theirs in zip(got, expect[0][1])]
        if kv_scales is None:  # (0.2-0.26 seen on the CPU)
            assert min(errors) > 0.1 and cache.layers[0].keys.float().abs().max() == 448
            continue
        assert max(errors) < 0.03  # (1.1-1.3e-2 seen on the CPU)
        scales = [attention.rooftop_kv_scales for attention in attentions]
        if kv_scales == "prefill":
            assert sum(scales, ()) == pytest.approx(sum(calibrated[0], ()), rel=3e-2)  # (layer 1's rows from codes)
        for i, ((k_scale, v_scale), ours, theirs) in enumerate(zip(scales, cache.layers, expect[0][0].layers)):
            assert ours.rooftop_kv_scales == (k_scale, v_scale)
            for codes, rows, scale in ((ours.keys, theirs.keys, k_scale), (ours.values, theirs.values, v_scale)):
                assert rel_err(codes[:, :, :12].float() * scale, rows[:, :, :12]) < 0.05
                if i == 0:  # the prompt's rows within a code of quantize_kv's (layer 1's come from codes already)
                    codes, rows = codes[:, :, :10].double(), quantize_kv(rows[:, :, :10], scale).double()
                    assert ((codes - rows).abs() <= rows.abs() / 8 + 2.0**-9).all()
        cache.reset()
        for ids, again, (_, want) in ((prompts[1], None, expect[1]), (prompts[0], cache, expect[0])):
            got = decode(model, ids, again)[1]  # another cache, then the first after its reset()
            assert max(rel_err(ours, theirs) for ours, theirs in zip(got, want)) < 0.03
        assert [attention.rooftop_kv_scales for attention in attentions] == scales
        got = decode(twin, prompts[1], ahead=torch.float8_e4m3fn)[1]
        assert max(rel_err(ours, theirs) for ours, theirs in zip(got, expect[1][1])) < 0.03
        twins = [layer.self_attn.rooftop_kv_scales for layer in twin.model.layers]
        if kv_scales == "prefill":  # the twin's own, from its rows
            assert sum(twins, ()) == pytest.approx(sum(calibrated[1], ()), rel=3e-2) and twins != scales
    filled, other = copy.deepcopy(stock), copy.deepcopy(stock)
    patch_model(filled, rope_append=rope_append, kv_cache_dtype="fp8", kv_scales=(8.0, 16.0))
    patch_model(other, rope_append=rope_append, kv_cache_dtype="fp8", kv_scales=(4.0, 8.0))
    with pytest.raises(ValueError, match=r"a cache layer holds fp8 codes at scales \(8.0, 16.0\), but its attention "
                                         r"module LlamaAttention \(layer_idx 0\) reads them at \(4.0, 8.0\)"):
        decode(other, prompts[0], decode(filled, prompts[0])[0])


def test_fp8_kv_cache_scales_checks():
    _, _, stock = _tiny_llama()
    with pytest.raises(ValueError, match='kv_scales is for kv_cache_dtype="fp8" caches'):
        patch_model(copy.deepcopy(stock), kv_scales="prefill")
    for kv_scales, error in (((1.0, float("inf")), r"kv_scales\[1\] must be a positive finite float"),
                             ("calibrate", r'kv_scales must be a \(k_scale, v_scale\) pair .*"prefill"'),
                             ({0: (1.0, 1.0)}, r"exactly the model's layers \[0, 1\]; missing \[1\], unknown \[\]"),
                             ({i: (1.0, 1.0) for i in (0, 1, 7)}, r"missing \[\], unknown \[7\]")):
        with pytest.raises(ValueError, match=error):
            patch_model(copy.deepcopy(stock), kv_cache_dtype="fp8", kv_scales=kv_scales)
    towered = copy.deepcopy(stock)  # an attention without a layer_idx (a vision tower's) takes no scales
    towered.vision_tower = nn.Module()
    towered.vision_tower.q_proj = nn.Linear(8, 8)
    patch_model(towered, kv_cache_dtype="fp8", kv_scales={0: (1.0, 2.0), 1: (3.0, 4.0)})
    assert [layer.self_attn.rooftop_kv_scales for layer in towered.model.layers] == [(1.0, 2.0), (3.0, 4.0)]
    stock.model.layers[1].self_attn.is_kv_shared_layer = True  # as Gemma 3n marks a layer reading another's cache
    refused = copy.deepcopy(stock)
    with pytest.raises(ValueError, match=r"does not cover LlamaAttention \(layer_idx 1\): it reads another layer's "
                                         r"cache rows, and no layer before it .* stores them"):
        patch_model(refused, kv_cache_dtype="fp8")  # (no layer marked store_full_length_kv)
    assert not any("forward" in vars(m) for m in refused.modules())  # refused before anything changed
    patch_model(copy.deepcopy(stock))  # 16-bit caches: as before


@pytest.mark.parametrize("rope_append", [True, False], ids=["rope_append", "apart"])
def test_fp8_kv_cache(rope_append, monkeypatch):
    """patch_model(kv_cache_dtype="fp8"): after the prefill (transformers' own update, whose rows the prefill reads)
    each StaticLayer holds fp8 codes of its rows (the stock cache's within e4m3's rounding), the decode steps append
    codes (with the RoPE by rooftop.apply_rope_append_kv, or apart by rooftop.append_kv) and read them by
    rooftop.decode_attention, and the logits stay within that rounding of the stock model's."""
    transformers, config, stock = _tiny_llama()
    patched = copy.deepcopy(stock)
    with pytest.raises(ValueError, match='kv_cache_dtype must be None or "fp8"'):
        patch_model(copy.deepcopy(stock), kv_cache_dtype="int8")
    with pytest.raises(ValueError, match="needs decode_attention and kv_append"):
        patch_model(copy.deepcopy(stock), kv_append=False, kv_cache_dtype="fp8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every layer routed: no warning
        counts = patch_model(patched, rope_append=rope_append, kv_cache_dtype="fp8")
    assert counts == (LLAMA_COUNTS if rope_append else {**LLAMA_COUNTS, "rope_append": 0})
    with pytest.MonkeyPatch.context() as mp:  # a transformers whose StaticLayer.update rooftop does not know
        mp.setattr(rooftop.integrations.hf, "_static_classes", None)
        mp.setattr(rooftop.integrations.hf, "_known_static_classes", lambda: None)
        with pytest.warns(UserWarning, match=r"2 attention layers \(LlamaAttention; layer_idx \[0, 1\]\) keep their"):
            assert patch_model(copy.deepcopy(stock), kv_cache_dtype="fp8")["kv_append"] == 0
    refused = copy.deepcopy(stock)  # on a GPU without fp8 kernels: an error at the first update, the cache unchanged
    patch_model(refused, kv_cache_dtype="fp8")
    monkeypatch.setattr(rooftop.integrations.hf, "check_fp8_device",
                        lambda name, dev: (_ for _ in ()).throw(RuntimeError(f"refused: {name}")))
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    ids = torch.randint(0, 128, (2, 10), device=DEVICE)
    cache = transformers.StaticCache(config=config, max_cache_len=24)
    with pytest.raises(RuntimeError, match=r'refused: patch_model\(kv_cache_dtype="fp8"\)'), torch.no_grad():
        refused(ids, use_cache=True, **{cache_arg: cache})
    assert cache.layers[0].keys.dtype == torch.float32
    monkeypatch.undo()
    calls, appends = [], []
    real = rooftop.integrations.hf.decode_attention
    monkeypatch.setattr(rooftop.integrations.hf, "decode_attention",
                        lambda q, k, *a, **kw: calls.append(k.dtype) or real(q, k, *a, **kw))
    for name in ("append_kv", "apply_rope_append_kv"):
        real_append = getattr(rooftop.integrations.hf, name)
        monkeypatch.setattr(rooftop.integrations.hf, name,
                            lambda *a, name=name, real=real_append, **k: appends.append(name) or real(*a, **k))
    steps = torch.randint(0, 128, (3, 2, 1), device=DEVICE)
    caches, logits = {}, {}
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = caches[name] = transformers.StaticCache(config=config, max_cache_len=24)
            mask = torch.ones_like(ids)
            model(ids, attention_mask=mask, use_cache=True, **{cache_arg: cache})
            if name == "patched":  # (e4m3's rounding: 2.5-3.0e-2 seen on the CPU)
                for ours, theirs in zip(cache.layers, caches["stock"].layers):
                    assert ours.keys.dtype == ours.values.dtype == torch.float8_e4m3fn
                    assert rel_err(ours.keys[:, :, :10].float(), theirs.keys[:, :, :10]) < 0.05
                    assert rel_err(ours.values[:, :, :10].float(), theirs.values[:, :, :10]) < 0.05
            logits[name] = []
            for token in steps:
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
                logits[name].append(model(token, attention_mask=mask, use_cache=True, **{cache_arg: cache}).logits)
    way = "apply_rope_append_kv" if rope_append else "append_kv"
    assert calls == [torch.float8_e4m3fn] * 2 * len(steps) and appends == [way] * 2 * len(steps)
    for ours, theirs in zip(caches["patched"].layers, caches["stock"].layers):  # the steps' rows appended as codes
        assert rel_err(ours.keys[:, :, 10:13].float(), theirs.keys[:, :, 10:13]) < 0.05
    for ours, theirs in zip(logits["patched"], logits["stock"]):  # (1.1-1.3e-2 seen on the CPU)
        assert rel_err(ours, theirs) < 0.03
    layers = caches["patched"].layers
    assert all(getattr(t, "_dynamo_static_input_type", None) for layer in layers for t in (layer.keys, layer.values))
    addresses = [(layer.keys.data_ptr(), layer.values.data_ptr()) for layer in layers]
    with torch.no_grad():
        # after reset() the codes stay (zeroed, the same addresses, as a CUDA graph needs): the prefill appends codes
        # and reads them through a 16-bit copy, the steps as before
        caches["patched"].reset()
        mask = torch.ones_like(ids)
        patched(ids, attention_mask=mask, use_cache=True, **{cache_arg: caches["patched"]})
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
        again = patched(steps[0], attention_mask=mask, use_cache=True, **{cache_arg: caches["patched"]}).logits
        assert [(layer.keys.data_ptr(), layer.values.data_ptr()) for layer in layers] == addresses
        assert rel_err(again, logits["stock"][0]) < 0.03
        # a cache initialised ahead (generate's chunked prefill): its layers become codes at their first update
        cache = transformers.StaticCache(config=config, max_cache_len=24)
        cache.early_initialization(2, config.num_key_value_heads, config.hidden_size // config.num_attention_heads,
                                   torch.float32, ids.device)
        mask = torch.ones_like(ids)
        patched(ids, attention_mask=mask, use_cache=True, **{cache_arg: cache})
        assert all(layer.keys.dtype == layer.values.dtype == torch.float8_e4m3fn for layer in cache.layers)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
        early = patched(steps[0], attention_mask=mask, use_cache=True, **{cache_arg: cache}).logits
        assert rel_err(early, logits["stock"][0]) < 0.03
        # a model patched for 16-bit caches over one initialised ahead in fp8: codes of unknown scales, an error
        plain = copy.deepcopy(stock)
        patch_model(plain)
        cache = transformers.StaticCache(config=config, max_cache_len=24)
        cache.early_initialization(2, config.num_key_value_heads, config.hidden_size // config.num_attention_heads,
                                   torch.float8_e4m3fn, ids.device)
        with pytest.raises(ValueError, match="LlamaAttention got fp8 keys but knows no scales for them"):
            plain(ids, attention_mask=torch.ones_like(ids), use_cache=True, **{cache_arg: cache})
        # a DynamicCache: its layers keep the model's dtype, one warning an attention module (not one a step)
        dynamic = transformers.DynamicCache(config=config)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            patched(ids, use_cache=True, **{cache_arg: dynamic})
            patched(steps[0], use_cache=True, **{cache_arg: dynamic})
        kept = [str(w.message) for w in seen if "keeps its cache" in str(w.message)]
        assert kept == ['kv_cache_dtype="fp8": a LlamaAttention keeps its cache in the model\'s dtype where its cache '
                        "layer is a DynamicLayer, not a StaticLayer"] * config.num_hidden_layers
        assert all(layer.keys.dtype == torch.float32 for layer in dynamic.layers)


def _causal_seen(B, Sq, Sk, n, left=None):
    """[B, 1, Sq, Sk] bool: query i at key i + n - Sq sees the keys [i' - left, i'] of the first n (a mask
    transformers builds for a prefill after n - Sq cached keys, within a window of left + 1)."""
    i, j = torch.arange(Sq, device=DEVICE)[:, None] + n - Sq, torch.arange(Sk, device=DEVICE)[None]
    seen = (j <= i) & (j >= (i - left if left is not None else 0))
    return seen[None, None].expand(B, 1, -1, -1).clone()


GPT_OSS = dict(sliding_window=8, num_local_experts=4, num_experts_per_tok=2)  # layers of a window of 8 and full ones


def _tiny_eager(arch: str, **overrides):
    """(transformers, config, stock, patched, the forward's cache argument) for a 2-layer `arch` with eager attention
    (gpt-oss's: sinks, random here; Gemma 2's: soft-capped) and `overrides` in its config."""

    transformers = pytest.importorskip("transformers")
    config = getattr(transformers, f"{arch}Config")(vocab_size=128, hidden_size=64, intermediate_size=96,
                                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                   head_dim=16, max_position_embeddings=64, **overrides)
    config._attn_implementation = "eager"
    stock = getattr(transformers, f"{arch}ForCausalLM")(config).to(DEVICE).eval()
    with torch.no_grad():
        for layer in stock.model.layers:
            if hasattr(layer.self_attn, "sinks"):
                layer.self_attn.sinks.normal_(std=2.0)  # transformers starts them at zero
    patched = copy.deepcopy(stock)
    assert patch_model(patched)["decode_attention"] == 2
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    return transformers, config, stock, patched, cache_arg


@pytest.mark.parametrize("cache_kind", ["static", "dynamic"])
def test_gpt_oss_decode_steps_take_decode_attention_with_sinks(cache_kind, monkeypatch):
    """gpt-oss: a left-padded batch decoding past its window from transformers' StaticCache or DynamicCache; the
    patched model's decode steps call rooftop.decode_attention with the layer's sinks, and give the stock model's
    logits; its prefill (padded) goes to attention_varlen (test_padded_prefill_takes_attention_varlen)."""
    transformers, config, stock, patched, cache_arg = _tiny_eager("GptOss", **GPT_OSS)
    calls = []
    real = rooftop.integrations.hf.decode_attention
    monkeypatch.setattr(rooftop.integrations.hf, "decode_attention",
                        lambda *a, **k: calls.append(k["sinks"]) or real(*a, **k))
    ids = torch.randint(0, 128, (2, 6), device=DEVICE)
    steps = torch.randint(0, 128, (6, 2, 1), device=DEVICE)  # 12 keys at the end: past the window of 8
    padding = torch.ones(2, 6, dtype=torch.long, device=DEVICE)
    padding[1, :2] = 0
    monkeypatch.setattr(rooftop.integrations.hf, "attention", None)  # the padded prefill never calls it
    logits = {}
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = (transformers.StaticCache(config=config, max_cache_len=16) if cache_kind == "static"
                     else transformers.DynamicCache(config=config))
            mask, positions = padding, (padding.cumsum(-1) - 1).clamp_min(0)
            model(ids, attention_mask=mask, position_ids=positions, use_cache=True, **{cache_arg: cache})
            logits[name] = []
            for token in steps:
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
                positions = positions[:, -1:] + 1
                logits[name].append(model(token, attention_mask=mask, position_ids=positions, use_cache=True,
                                          **{cache_arg: cache}).logits)
    assert len(calls) == 2 * len(steps) and calls[0] is patched.model.layers[0].self_attn.sinks
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)


@pytest.mark.parametrize("cache_kind", ["static", "dynamic"])
def test_gpt_oss_prefill_takes_attention_with_sinks(cache_kind, monkeypatch):
    """gpt-oss's prefill without padding: its eager attention calls rooftop.attention with the layer's sinks, causal
    over the keys the mask lets through and within the sliding window (12 prompt tokens past the window of 8, then a
    chunk of 5 after them in the cache), and gives the stock model's logits; with prefill_attention=False it stays
    eager."""
    transformers, config, stock, patched, cache_arg = _tiny_eager("GptOss", **GPT_OSS)
    calls = []
    real = rooftop.integrations.hf.attention
    monkeypatch.setattr(rooftop.integrations.hf, "attention",
                        lambda q, k, v, **kw: calls.append((q.shape[2], k.shape[2], kw["window"], kw["sinks"]))
                        or real(q, k, v, **kw))
    chunks = torch.randint(0, 128, (2, 12), device=DEVICE), torch.randint(0, 128, (2, 5), device=DEVICE)
    logits = {}
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = (transformers.StaticCache(config=config, max_cache_len=24) if cache_kind == "static"
                     else transformers.DynamicCache(config=config))
            logits[name] = [model(ids, use_cache=True, **{cache_arg: cache}).logits for ids in chunks]
    eager = copy.deepcopy(stock)
    patch_model(eager, prefill_attention=False)
    with torch.no_grad():
        before = len(calls)
        eager(chunks[0])
        assert len(calls) == before  # prefill_attention=False: gpt-oss's prefill stays eager
    layers = patched.model.layers
    sliding = [layer.self_attn.sliding_window is not None for layer in layers]
    assert sorted(sliding) == [False, True]
    assert [(sq, window, sinks) for sq, _, window, sinks in calls] == [
        (sq, 7 if slide else None, layer.self_attn.sinks) for sq in (12, 5) for layer, slide in zip(layers, sliding)]
    assert [call[1] for call, slide in zip(calls, sliding * 2) if not slide] == [12, 17]  # keys read, full layer
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)


@pytest.mark.parametrize("cache_kind", ["static", "dynamic"])
def test_gemma2_eager_takes_the_kernels_with_its_softcap(cache_kind, monkeypatch):
    """Gemma 2 (no SDPA in transformers: it soft-caps its scores; eager attention, sliding-window layers of 4 between
    full ones): its prefill (no padding) goes to rooftop.attention and its decode steps to rooftop.decode_attention,
    both with the layer's cap (1.0 here: random weights' scores reach it), and give the stock model's logits."""
    transformers, config, stock, patched, cache_arg = _tiny_eager("Gemma2", sliding_window=4,
                                                                  attn_logit_softcapping=1.0, query_pre_attn_scalar=1)
    calls = []
    for name in ("attention", "decode_attention"):
        real = getattr(rooftop.integrations.hf, name)
        monkeypatch.setattr(rooftop.integrations.hf, name,
                            lambda *a, real=real, name=name, **k: calls.append((name, k["softcap"])) or real(*a, **k))
    ids = torch.randint(0, 128, (2, 7), device=DEVICE)
    steps = torch.randint(0, 128, (3, 2, 1), device=DEVICE)
    logits = {}
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = (transformers.StaticCache(config=config, max_cache_len=16) if cache_kind == "static"
                     else transformers.DynamicCache(config=config))
            logits[name] = [model(ids, use_cache=True, **{cache_arg: cache}).logits]
            logits[name] += [model(token, use_cache=True, **{cache_arg: cache}).logits for token in steps]
    assert calls == [("attention", 1.0)] * 2 + [("decode_attention", 1.0)] * 6
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)
    gemma2 = transformers.models.gemma2.modeling_gemma2.eager_attention_forward
    gpt_oss = transformers.models.gpt_oss.modeling_gpt_oss.eager_attention_forward

    def look_alike(module, query, key, value, attention_mask, dropout=0.0, scaling=None, softcap=None, **kwargs):
        return torch.tanh(torch.matmul(query, key.transpose(2, 3)) * scaling).softmax(-1), softcap  # capped wrongly
    hf = rooftop.integrations.hf
    assert hf._softcap_eager(gemma2) and hf._sinks_eager(gpt_oss)
    assert not (hf._softcap_eager(gpt_oss) or hf._sinks_eager(gemma2) or hf._softcap_eager(look_alike))


@pytest.mark.parametrize("elements", [1 << 24, 25], ids=["one pass", "a row a pass"])
def test_prefill_window_reads_only_causal_windowed_masks(elements, monkeypatch):
    """_prefill_window: transformers' masks (boolean; additive: eager's) causal within a window (or none), at the
    cache's start or after keys already there, give (keys read, left); padding, soft biases, a wider window on one
    row, the other kind of mask do not; whether the mask is compared in one pass or a row at a time."""
    from rooftop.integrations.hf import _prefill_window

    monkeypatch.setattr(rooftop.integrations.hf, "MASK_CHECK_ELEMENTS", elements)

    def additive(seen):
        return torch.where(seen, 0.0, torch.finfo(torch.float32).min)

    causal = _causal_seen
    query, key = torch.randn(2, 4, 6, 16, device=DEVICE), torch.randn(2, 2, 10, 16, device=DEVICE)
    for form, kind in ((additive, True), (lambda seen: seen, False)):
        assert _prefill_window(query, key, form(causal(2, 6, 10, 6)), kind) == (6, None)  # a static cache's slots
        assert _prefill_window(query, key, form(causal(1, 6, 10, 10, 3)), kind) == (10, 3)  # after 4 keys, a window
        assert _prefill_window(query, key, form(causal(2, 6, 10, 10, 20)), kind) == (10, None)  # a window past all
        assert _prefill_window(query, key, form(causal(2, 6, 12, 9)), kind) == (9, None)  # a mask wider
        padded = causal(2, 6, 10, 10)
        padded[1, ..., :2] = False
        wider = causal(2, 6, 10, 10, 3)
        wider[0, 0, 2, 0] = True
        for mask in (form(padded), form(wider), None, form(causal(2, 6, 10, 10))[..., :9],
                     (additive(causal(2, 6, 10, 10)) == 0) if kind else additive(causal(2, 6, 10, 10))):
            assert _prefill_window(query, key, mask, kind) is None
        assert _prefill_window(query[:, :, :1], key, form(causal(2, 1, 10, 10)), kind) is None  # a decode step
    soft = additive(causal(2, 6, 10, 10))
    soft[..., 0] = -1.0  # a soft bias, neither seen nor masked
    assert _prefill_window(query, key, soft, True) is None
    reused = causal(2, 6, 10, 10)  # one mask object written in place between calls: read again
    assert _prefill_window(query, key, reused) == (10, None)
    reused[1, ..., :2] = False
    assert _prefill_window(query, key, reused) is None
    with torch.inference_mode():  # a mask of inference mode (no version counter): read every call outside a forward
        made = causal(2, 6, 10, 10, 3)
        assert _prefill_window(query, key, made) == (10, 3)
        made[1, ..., :2] = False
        assert _prefill_window(query, key, made) is None
        hf = rooftop.integrations.hf
        hf._forward_begins(None, ())  # inside a patched model's forward: read once for its layers
        try:
            made = causal(2, 6, 10, 10, 3)
            assert _prefill_window(query, key, made) == (10, 3)
            made[1, ..., :2] = False  # (no forward writes its mask between its layers)
            assert _prefill_window(query, key, made) == (10, 3)
        finally:
            hf._forward_ends(None, (), None)
        assert not hf._in_forward and _prefill_window(query, key, made) is None
        model = torch.nn.Identity()
        hf._forward_begins(model, ())  # a forward that died past its forward hook (KeyboardInterrupt) ...
        assert _prefill_window(query, key, made) is None and hf._in_forward
        hf._forward_begins(model, ())  # ... then the model called again: it starts afresh, counted once
        assert not hf._in_forward
        hf._forward_ends(model, (), None)
        assert hf._forwards_running == [0, None] and not hf._in_forward


def test_prefill_padded_reads_only_left_padded_causal_masks():
    """_prefill_padded: left-padded sequences, causal past their padding (boolean and additive masks; a window; after
    keys already cached, one sequence's padding past the queries' start), give each sequence's queries and keys past
    its padding; the padding's own rows are not read; right padding, a hole, a padded key seen, a wider window on one
    row, a sequence of padding alone do not."""
    from rooftop.integrations.hf import _prefill_padded

    def additive(seen):
        return torch.where(seen, 0.0, torch.finfo(torch.float32).min)

    def padded(Sq, Sk, pads, left=None):
        mask = _causal_seen(len(pads), Sq, Sk, Sk, left)
        for b, p in enumerate(pads):
            mask[b, ..., :p] = False
        return mask

    query, key = torch.randn(2, 4, 6, 16, device=DEVICE), torch.randn(2, 2, 6, 16, device=DEVICE)
    for form, kind in ((additive, True), (lambda seen: seen, False)):
        layout = _prefill_padded(query, key, form(padded(6, 6, [0, 2])), kind)
        assert layout.cu_q.tolist() == [0, 6, 10] == layout.cu_k.tolist() and (layout.max_q, layout.left) == (6, None)
        assert layout.q_rows[0].tolist() == [0] * 6 + [1] * 4 and layout.q_rows[1].tolist()[6:] == [2, 3, 4, 5]
        noisy = padded(6, 6, [0, 2])
        noisy[1, 0, 1, 3] = True  # a padding query's row: not read
        assert _prefill_padded(query, key, form(noisy), kind).cu_q.tolist() == [0, 6, 10]
        assert _prefill_padded(query, key, form(padded(6, 6, [1, 3], 2)), kind).left == 2  # a window of 3
        cached = _prefill_padded(query[:, :, :4], torch.randn(2, 2, 9, 16, device=DEVICE),
                                 form(padded(4, 9, [0, 7])), kind)  # 5 keys cached; sequence 1 padded to key 7
        assert cached.cu_q.tolist() == [0, 4, 6] and cached.cu_k.tolist() == [0, 9, 11]
        assert cached.q_rows[1].tolist() == [0, 1, 2, 3, 2, 3] and cached.k_rows[1].tolist()[9:] == [7, 8]
        static = torch.zeros(2, 1, 6, 10, dtype=torch.bool, device=DEVICE)  # a static cache's 4 unwritten slots
        static[..., :6] = padded(6, 6, [1, 3])
        layout = _prefill_padded(query, torch.randn(2, 2, 10, 16, device=DEVICE), form(static), kind)
        assert layout.cu_k.tolist() == [0, 5, 8] and layout.k_rows[1].tolist() == [1, 2, 3, 4, 5, 3, 4, 5]
        right = _causal_seen(2, 6, 6, 6)
        right[1, ..., 4:] = False
        hole = padded(6, 6, [0, 2])
        hole[1, ..., 3] = False
        seen_pad = padded(6, 6, [0, 2])
        seen_pad[1, 0, 5, 1] = True
        wider = padded(6, 6, [0, 1], 2)
        wider[0, 0, 5, 2] = True
        nothing_seen = padded(6, 6, [0, 0])
        nothing_seen[..., 5, :] = False  # the last query sees no key: no window of width 0 read as unbounded
        nothing_seen[0, 0, 5, 5] = True
        for mask in (right, hole, seen_pad, wider, padded(6, 6, [0, 6]), nothing_seen):
            assert _prefill_padded(query, key, form(mask), kind) is None
    soft = additive(padded(6, 6, [0, 2]))
    soft[0, ..., 0] = -1.0
    assert _prefill_padded(query, key, soft, True) is None


@pytest.mark.parametrize("cache_kind", ["static", "dynamic"])
@pytest.mark.parametrize("arch", ["GptOss", "Gemma2"])
def test_padded_prefill_takes_attention_varlen(arch, cache_kind, monkeypatch):
    """gpt-oss's (sinks, a window of 8) and Gemma 2's (soft-capped, a window of 4) left-padded prefill (12 tokens, one
    sequence padded by 5) goes to attention_varlen with the layer's sinks or cap and window, over a DynamicCache and
    a StaticCache (its unwritten slots cut), and gives stock's logits past the padding; a decode step after it gives
    stock's."""
    overrides = GPT_OSS if arch == "GptOss" else dict(sliding_window=4, attn_logit_softcapping=1.0,
                                                      query_pre_attn_scalar=1)
    transformers, config, stock, patched, cache_arg = _tiny_eager(arch, **overrides)
    calls = []
    real = rooftop.integrations.hf.attention_varlen
    monkeypatch.setattr(rooftop.integrations.hf, "attention_varlen", lambda *a, **kw: calls.append(
        (a[3].tolist(), a[4].tolist(), kw["window"], kw["sinks"], kw["softcap"])) or real(*a, **kw))
    ids = torch.randint(0, 128, (2, 12), device=DEVICE)
    mask = torch.ones(2, 12, dtype=torch.long, device=DEVICE)
    mask[1, :5] = 0
    step = torch.randint(0, 128, (2, 1), device=DEVICE)
    logits = {}
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = (transformers.StaticCache(config=config, max_cache_len=16) if cache_kind == "static"
                     else transformers.DynamicCache(config=config))
            first = model(ids, attention_mask=mask, use_cache=True, **{cache_arg: cache}).logits[mask.bool()]
            longer = torch.cat([mask, torch.ones_like(mask[:, :1])], -1)
            logits[name] = [first, model(step, attention_mask=longer, use_cache=True, **{cache_arg: cache}).logits]
    layers = patched.model.layers
    windows = [overrides["sliding_window"] - 1 if getattr(layer.self_attn, "sliding_window", None) else None
               for layer in layers]
    assert None in windows and len(set(windows)) == 2  # a full layer and a sliding one
    assert calls == [([0, 12, 19], [0, 12, 19], window, getattr(layer.self_attn, "sinks", None),
                      None if arch == "GptOss" else 1.0) for layer, window in zip(layers, windows)]
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)


def test_gpt_oss_eager_decode_takes_only_its_own_sinks(monkeypatch):
    """The wrapped gpt-oss eager function: a decode step with the module's sinks as s_aux (and output_attentions=False,
    a flag that asks for nothing) goes to decode_attention; s_aux None or another tensor, a bool mask, or a prefill
    stay with the eager function; each gives the eager function's result."""
    from types import SimpleNamespace

    gpt_oss = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
    eager = gpt_oss.eager_attention_forward
    assert rooftop.integrations.hf._sinks_eager(eager)
    attention = rooftop.integrations.hf._routed(eager, sinks_eager=True)
    calls = []
    real = rooftop.integrations.hf.decode_attention
    monkeypatch.setattr(rooftop.integrations.hf, "decode_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    module = SimpleNamespace(sinks=torch.randn(4, device=DEVICE) * 2, num_key_value_groups=2, training=False)
    key, value = (torch.randn(2, 2, 8, 16, device=DEVICE) for _ in range(2))
    mask = torch.zeros(2, 1, 1, 8, device=DEVICE)
    mask[1, ..., :3] = torch.finfo(torch.float32).min  # left padding
    for query, step_mask, kwargs, takes in (
            (torch.randn(2, 4, 1, 16, device=DEVICE), mask, dict(s_aux=module.sinks, output_attentions=False), True),
            (torch.randn(2, 4, 1, 16, device=DEVICE), mask, dict(s_aux=None), False),
            (torch.randn(2, 4, 1, 16, device=DEVICE), mask, dict(s_aux=module.sinks.clone()), False),
            (torch.randn(2, 4, 1, 16, device=DEVICE), mask == 0, dict(s_aux=module.sinks), False),
            (torch.randn(2, 4, 3, 16, device=DEVICE), mask.expand(-1, -1, 3, -1), dict(s_aux=module.sinks), False)):
        before = len(calls)
        out, _ = attention(module, query, key, value, step_mask, scaling=0.25, **kwargs)
        assert len(calls) - before == int(takes and rooftop.ops._support.runs_kernel(query))  # (a CPU model: eager)
        if step_mask.dtype == torch.bool:
            continue  # eager adds a bool mask as 0 / 1: not a mask it would be given
        ref, _ = eager(module, query, key, value, step_mask, scaling=0.25)
        assert rel_err(out, ref) < (1e-2 if HAS_CUDA else 1e-5)


def test_fp8_cache_rows_only_attended():
    """fp8 codes go back to a forward only where the names it gives the cache's keys and values are read after the
    update as arguments of its attention call alone: not where it computes from them (Doge's mask from the values)."""
    import ast

    from rooftop.integrations.hf import _cache_rows_only_attended

    def attended(body):
        return _cache_rows_only_attended(ast.parse(f"def forward(self, x, cache):\n{body}").body[0])

    llama = ("    k = rope(x, k)\n    k, v = cache.update(k, v, self.layer_idx)\n"
             "    out = attend(self, q, k, v, mask)\n    return out\n")
    assert attended(llama)
    assert not attended(llama + "    m = v.sum()\n")  # (a use past the attention call too)
    assert not attended(llama.replace("attend(self, q, k, v, mask)", "attend(self, q, k, v.float(), mask)"))
    assert attended(llama.replace("attend(self, q, k, v, mask)", "attend(self, q, key=k, value=v)"))


class OwnSdpaAttention(nn.Module):  # Falcon's form: q, k and v by one projection, SDPA called by the forward itself
    def __init__(self, hidden, layer_idx):
        super().__init__()
        self.query_key_value, self.layer_idx = nn.Linear(hidden, 3 * hidden), layer_idx

    def forward(self, x, layer_past=None):
        q, k, v = self.query_key_value(x).unsqueeze(1).chunk(3, dim=-1)
        if layer_past is not None:
            k, v = layer_past.update(k, v, self.layer_idx)
        return nn.functional.scaled_dot_product_attention(q, k, v).squeeze(1)


class PassingLayer(nn.Module):  # a decoder layer that has a layer_idx and passes its cache on without updating it
    def __init__(self, hidden, layer_idx, attention=True):
        super().__init__()
        self.attn, self.layer_idx = OwnSdpaAttention(hidden, layer_idx) if attention else None, layer_idx

    def forward(self, x, past_key_values=None):
        return x if self.attn is None else x + self.attn(x, layer_past=past_key_values)


def test_fp8_unrouted_caches_named():
    """patch_model(kv_cache_dtype="fp8") names, once at patch time, the attentions it leaves with 16-bit caches:
    modules whose forward updates a cache it is given though neither their projections nor their attention call are
    rooftop's (Falcon's), not the layers that only pass a cache on."""
    model = nn.Sequential(PassingLayer(16, 0), PassingLayer(16, 1)).to(DEVICE)
    with pytest.warns(UserWarning, match=r"2 attention layers \(OwnSdpaAttention; layer_idx \[0, 1\]\) keep their ca"):
        patch_model(model, kv_cache_dtype="fp8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        patch_model(nn.Sequential(PassingLayer(16, 0, attention=False)).to(DEVICE), kv_cache_dtype="fp8")


def test_gpt_neox_decode_steps_over_a_static_cache(monkeypatch):
    """GPT-NeoX (its attention found by its call, q, k and v from one query_key_value, its cache passed as layer_past,
    a partial rotary): the patched model's decode steps over a StaticCache append with the RoPE by
    rooftop.apply_rope_append_kv and read by rooftop.decode_attention, giving the stock logits; with
    kv_cache_dtype="fp8" its cache layers hold codes and the first step's logits stay within e4m3's rounding."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "GPTNeoXForCausalLM"):
        pytest.skip("this transformers has no GPT-NeoX")
    config = transformers.GPTNeoXConfig(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                        num_attention_heads=4, max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    stock = transformers.GPTNeoXForCausalLM(config).to(DEVICE).eval()
    patched, fp8 = copy.deepcopy(stock), copy.deepcopy(stock)
    assert patch_model(patched) == swaps(layer_norm=5, rope=2, decode_attention=2, kv_append=2, rope_append=2)
    patch_model(fp8, kv_cache_dtype="fp8")
    calls = []
    for name in ("decode_attention", "apply_rope_append_kv"):
        real = getattr(rooftop.integrations.hf, name)
        monkeypatch.setattr(rooftop.integrations.hf, name,
                            lambda *a, name=name, real=real, **k: calls.append(name) or real(*a, **k))
    ids = torch.randint(0, 128, (2, 8), device=DEVICE)
    kwargs = dict(max_new_tokens=3, do_sample=False, cache_implementation="static", output_logits=True,
                  return_dict_in_generate=True, pad_token_id=0)
    with torch.no_grad():
        want = torch.stack(stock.generate(ids, **kwargs).logits)
        assert calls == []
        got = torch.stack(patched.generate(ids, **kwargs).logits)
        # two decode steps (the prefill initialises the cache by transformers' own update), two layers each
        assert sorted(calls) == ["apply_rope_append_kv"] * 4 + ["decode_attention"] * 4
        out = fp8.generate(ids, **kwargs)
    assert rel_err(got, want) < (1e-2 if HAS_CUDA else 1e-4)
    assert [layer.keys.dtype for layer in out.past_key_values.layers] == [torch.float8_e4m3fn] * 2
    assert rel_err(out.logits[1], want[1]) < 5e-2  # (the same prefill's token: the same step)


def test_encoder_attention_left_alone():
    """An encoder's attention (BERT's: not causal) picks transformers' attention functions with a cache parameter
    too, but is neither decode steps nor causal prefills: patch_model routes nothing of it and keeps its outputs."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                     num_attention_heads=4, max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    model = transformers.BertModel(config).to(DEVICE).eval()
    ids = torch.randint(0, 128, (2, 8), device=DEVICE)
    with torch.no_grad():
        before = model(ids).last_hidden_state
        counts = patch_model(model)
        assert counts["decode_attention"] == counts["kv_append"] == 0
        assert rel_err(model(ids).last_hidden_state, before) < (1e-2 if HAS_CUDA else 1e-4)


def test_decode_steps_left_to_sdpa(monkeypatch):
    """The decode-aware SDPA function takes decode_attention only for a call it computes exactly as SDPA would, on a
    device its kernel runs on; anything else (more than one query, dropout, soft-capping, a float mask, head dims
    past its kernel's, heads that do not group, a strided head dim, a CPU model without the interpreter) goes to
    SDPA."""
    from rooftop.integrations import hf

    calls = []
    attention = hf._routed(lambda module, q, *a, **k: calls.append("sdpa") or (q, None))
    monkeypatch.setattr(hf, "decode_attention", lambda q, *a, **k: calls.append("rooftop") or q)

    def route(q_shape=(2, 4, 1, 16), kv_shape=(2, 2, 8, 16), mask=None, **kwargs):
        q, k = torch.randn(q_shape, device=DEVICE), torch.randn(kv_shape, device=DEVICE)
        attention(None, q, k, k.clone(), mask, **kwargs)
        return calls[-1]

    assert route() == "rooftop"
    assert route(mask=torch.ones(2, 1, 1, 8, dtype=torch.bool, device=DEVICE)) == "rooftop"
    assert route(q_shape=(2, 4, 2, 16)) == "sdpa"
    assert route(dropout=0.1) == route(softcap=30.0) == "sdpa"
    assert route(mask=torch.zeros(2, 1, 1, 8, device=DEVICE)) == "sdpa"
    assert route(q_shape=(2, 4, 1, 512), kv_shape=(2, 2, 8, 512)) == "rooftop"  # (Gemma 4's full layers)
    assert route(q_shape=(2, 4, 1, 1024), kv_shape=(2, 2, 8, 1024)) == "sdpa"
    assert route(q_shape=(2, 3, 1, 16)) == "sdpa"
    q, k = torch.randn(2, 4, 1, 32, device=DEVICE)[..., ::2], torch.randn(2, 2, 8, 16, device=DEVICE)
    attention(None, q, k, k, None)
    assert calls[-1] == "sdpa"
    monkeypatch.setattr(hf, "runs_kernel", lambda t: False)
    assert route() == "sdpa"


def test_prefill_choices(monkeypatch):
    """The SDPA function's prefill route (prefill=True) takes rooftop.attention where it computes what SDPA would:
    causal without a mask (keys cut to the queries where the cache holds more; is_causal False: dense, every key), a
    boolean mask causal within a window, left padding (attention_varlen); a float mask, a position bias, causal with
    fewer keys than queries, and prefill=False go to SDPA; None (the default) takes it for 16-bit heads of 64 / 128
    / 256 on sm_90 GPUs only. gpt-oss's eager function: its prefill routed unless prefill=False."""
    from rooftop.integrations import hf

    calls = []

    def sdpa(module, q, *a, **k):
        calls.append("sdpa")
        return q, None

    monkeypatch.setattr(hf, "attention",
                        lambda q, k, v, **kw: calls.append((k.shape[2], kw["causal"], kw["window"])) or q)
    monkeypatch.setattr(hf, "attention_varlen",
                        lambda q, k, v, cu_q, cu_k, *a, **kw: calls.append(("varlen", cu_k.tolist())) or q)

    def route(mask=None, keys=8, prefill=True, D=16, dtype=torch.float32, function=sdpa, eager=False, weights=False,
              **kwargs):
        q, k = (torch.randn(2, h, s, D, device=DEVICE, dtype=dtype) for h, s in ((4, 6), (2, keys)))
        module = SimpleNamespace(is_causal=True, sinks=torch.zeros(4, device=DEVICE),
                                 config=SimpleNamespace(output_attentions=weights))
        if eager:
            kwargs["s_aux"] = module.sinks
        hf._routed(function, sinks_eager=eager, prefill=prefill)(module, q, k, k.clone(), mask, **kwargs)
        return calls[-1]

    def causal(Sk, n, left=None):
        return _causal_seen(2, 6, Sk, n, left)

    assert route() == (6, True, None)  # an empty StaticCache of 8: keys cut to the 6 queries
    assert route(keys=6) == (6, True, None)
    assert route(is_causal=False) == (8, False, None)
    assert route(mask=causal(8, 8)) == (8, True, None)  # after 2 cached keys
    assert route(mask=causal(8, 8, 2)) == (8, True, 2)  # a sliding window of 3
    padded = causal(8, 8)
    padded[1, ..., :2] = False
    assert route(mask=padded) == ("varlen", [0, 8, 14])  # left padding: each sequence's keys past it
    assert route(mask=torch.zeros(2, 1, 6, 8, device=DEVICE)) == "sdpa"  # a float mask (biases)
    assert route(position_bias=torch.zeros(1, 4, 6, 8, device=DEVICE)) == "sdpa"
    assert route(keys=4) == "sdpa"  # SDPA's top-left causal with Sq > Sk is not rooftop's bottom-right
    assert route(prefill=False) == route(dropout=0.1) == "sdpa"
    assert route(prefill=None) == "sdpa"  # fp32, D = 16: not measured against SDPA
    assert route(D=512) == route(D=512, mask=padded) == route(D=512, eager=True) == "sdpa"  # attention's D <= 256
    sm90 = HAS_CUDA and hf.is_sm90(0)
    assert route(prefill=None, D=64, dtype=torch.bfloat16) == ((6, True, None) if sm90 else "sdpa")
    additive = torch.where(causal(8, 8, 2), 0.0, torch.finfo(torch.float32).min)
    assert route(mask=additive, function=sdpa, eager=True, prefill=None) == (8, True, 2)  # gpt-oss's eager
    assert route(mask=additive, function=sdpa, eager=True, prefill=False) == "sdpa"  # (here its stand-in)
    assert route(mask=additive, function=sdpa, eager=True, weights=True) == "sdpa"  # the config asks for weights


@pytest.mark.parametrize("arch", ["Llama", "Mistral"])
def test_sdpa_prefill_takes_attention(arch, monkeypatch):
    """A patched SDPA model (prefill_attention=True; Mistral with a sliding window of 4): a prompt with no padding goes
    to rooftop.attention causal (the mask transformers skips), over a DynamicCache and over an empty StaticCache (keys
    cut to the prompt), then a second chunk under the mask transformers builds (causal after the cached keys, within
    the window), and a decode step after them (decode_attention); a left-padded prompt goes to attention_varlen over
    each sequence's tokens past its padding. Logits as stock's (the padding's own positions aside), under
    torch.inference_mode as generate() runs."""

    transformers = pytest.importorskip("transformers")
    config = getattr(transformers, f"{arch}Config")(
        vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, **({"sliding_window": 4} if arch == "Mistral" else {}))
    config._attn_implementation = "sdpa"
    stock = getattr(transformers, f"{arch}ForCausalLM")(config).to(DEVICE).eval()
    patched = copy.deepcopy(stock)
    patch_model(patched, prefill_attention=True)
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    calls = []
    real = rooftop.integrations.hf.attention
    monkeypatch.setattr(rooftop.integrations.hf, "attention",
                        lambda q, k, v, **kw: calls.append((k.shape[2], kw["causal"], kw["window"]))
                        or real(q, k, v, **kw))
    varlen = []
    real_varlen = rooftop.integrations.hf.attention_varlen
    monkeypatch.setattr(rooftop.integrations.hf, "attention_varlen",
                        lambda q, k, v, cu_q, cu_k, *a, **kw: varlen.append(
                            (cu_q.tolist(), cu_k.tolist(), kw["window"])) or real_varlen(q, k, v, cu_q, cu_k, *a, **kw))
    steps = []
    decode = rooftop.integrations.hf.decode_attention
    monkeypatch.setattr(rooftop.integrations.hf, "decode_attention", lambda *a, **k: steps.append(1) or decode(*a, **k))
    reads = []  # the masks read on the host (a sync each): once a forward, not a layer (its hooks keep them)
    once = rooftop.integrations.hf._once_per_mask
    monkeypatch.setattr(rooftop.integrations.hf, "_once_per_mask",
                        lambda key, mask, compute: once(key, mask, lambda: reads.append(key[0]) or compute()))
    # Llama: no mask for the prompt (causal over its keys, a static cache's cut to them), the second chunk's over the
    # 12 keys; Mistral: masks (its window of 4 inside the prompt), the second chunk over the window's 3 cached keys and
    # its own 5
    first, second = ((7, True, 3), (8, True, 3)) if arch == "Mistral" else ((7, True, None), (12, True, None))
    chunks = torch.randint(0, 128, (2, 7), device=DEVICE), torch.randint(0, 128, (2, 5), device=DEVICE)
    padding = torch.ones(2, 7, dtype=torch.long, device=DEVICE)
    padding[1, :2] = 0
    with torch.inference_mode():  # as generate() runs: masks without a version counter
        for cache_kind in ("dynamic", "static"):
            logits = {}
            for name, model in (("stock", stock), ("patched", patched)):
                cache = (transformers.StaticCache(config=config, max_cache_len=16) if cache_kind == "static"
                         else transformers.DynamicCache(config=config))
                logits[name] = [model(ids, use_cache=True, **{cache_arg: cache}).logits for ids in chunks]
                logits[name].append(model(chunks[1][:, :1], use_cache=True, **{cache_arg: cache}).logits)  # a step
                logits[name].append(model(chunks[0], attention_mask=padding).logits[padding.bool()])
            for ours, theirs in zip(logits["patched"], logits["stock"]):
                assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)
            assert calls == [first, first, second, second], cache_kind
            assert len(steps) == 2, cache_kind  # the decode step, a layer each
            # the padded prompt: sequence 0's 7 tokens, sequence 1's 5 past its padding (Mistral: its window of 4)
            assert varlen == [([0, 7, 12], [0, 7, 12], 3 if arch == "Mistral" else None)] * 2, cache_kind
            # each mask a forward reads (the padded prompt's: its window, then its padding), once for its two layers
            assert reads == {("Llama", "dynamic"): ["prefill", "prefill", "padded"],
                             ("Llama", "static"): ["prefill", "lengths", "prefill", "padded"]}.get(
                (arch, cache_kind), ["prefill", "prefill", "lengths", "prefill", "padded"]), cache_kind
            assert not rooftop.integrations.hf._in_forward
            for kept in (calls, steps, varlen, reads):
                kept.clear()


def test_patched_decode_step_compiles_without_graph_break():
    """A patched transformers Llama's decode step from a StaticCache is one graph under torch.compile, holding
    rooftop's decode_attention, not recompiled as the position moves, and gives the stock model's logits (the
    patched forwards' globals are traced, and guarded, where they are rebound, not in transformers' module)."""

    from torch._dynamo.testing import CompileCounterWithBackend

    transformers, config, stock = _tiny_llama()
    patched = copy.deepcopy(stock)
    patch_model(patched)
    cache_arg = "cache" if "cache" in inspect.signature(stock.model.forward).parameters else "past_key_values"
    ids = torch.randint(0, 128, (2, 10), device=DEVICE)
    tokens = torch.randint(0, 128, (3, 2, 1), device=DEVICE)
    inner = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    targets = set()

    def backend(gm, example_inputs):
        targets.update(str(node.target) for node in gm.graph.nodes)
        return inner(gm, example_inputs)

    logits = {}
    torch._dynamo.reset()
    with torch.no_grad():
        for name, model in (("stock", stock), ("patched", patched)):
            cache = transformers.StaticCache(config=config, max_cache_len=24)
            model(ids, use_cache=True, **{cache_arg: cache})

            def step(token, position, model=model, cache=cache):
                return model(token, use_cache=True, cache_position=position, **{cache_arg: cache}).logits

            run = torch.compile(step, backend=backend, fullgraph=True) if name == "patched" else step
            logits[name] = [run(t, torch.tensor([10 + i], device=DEVICE)) for i, t in enumerate(tokens)]
    assert inner.frame_count == 1 and {"rooftop.decode_attention.default",
                                       "rooftop.apply_rope_append_kv.default"} <= targets
    for ours, theirs in zip(logits["patched"], logits["stock"]):
        assert rel_err(ours, theirs) < (1e-2 if HAS_CUDA else 1e-4)


@pytest.mark.gpu
def test_quantized_decode_steps_under_reduce_overhead():
    """A patched, int4-quantized transformers Llama's decode steps from a StaticCache under
    torch.compile(mode="reduce-overhead"), as generate's static-cache recipe runs them (CUDA-graph trees: a warm-up,
    a recording, then replays; the split-K GEMVs' and decode attention's arrival counters first asked for there),
    give the logits of the same model run eagerly over a cache of its own, step by step."""

    from rooftop import quantize_model
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    config._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    patch_model(model)
    assert len(quantize_model(model, bits=4, group_size=128)["quantized"]) == 2 * 4  # qkv, o, gate + up, down
    cache_arg = "cache" if "cache" in inspect.signature(model.model.forward).parameters else "past_key_values"
    ids = torch.randint(0, 128, (2, 10), device="cuda")
    tokens = torch.randint(0, 128, (6, 2, 1), device="cuda")
    logits = {}
    torch._dynamo.reset()
    with torch.no_grad():
        for name in ("eager", "graphs"):
            cache = transformers.StaticCache(config=config, max_cache_len=24)
            model(ids, use_cache=True, **{cache_arg: cache})

            def step(token, position, cache=cache):
                return model(token, use_cache=True, cache_position=position, **{cache_arg: cache}).logits

            run = torch.compile(step, mode="reduce-overhead", fullgraph=True) if name == "graphs" else step
            logits[name] = [run(t, torch.tensor([10 + i], device="cuda")).clone() for i, t in enumerate(tokens)]
    for i, (ours, eager) in enumerate(zip(logits["graphs"], logits["eager"])):
        assert rel_err(ours, eager) < 1e-2, i


def test_patched_layers_compile_without_graph_break():
    """A patched model (fused norms, the stacked gate / up into swiglu) is one graph under torch.compile, and
    computes what it computes eagerly."""
    from torch._dynamo.testing import CompileCounterWithBackend

    model = nn.Sequential(Layer(LlamaRMSNorm), Layer(LlamaRMSNorm)).to(DEVICE)
    patch_model(model)
    x = torch.randn(2, 5, 64, device=DEVICE)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")  # inductor's CPU codegen: not ours
    with torch.no_grad():
        out = torch.compile(model, backend=counter, fullgraph=True)(x)
        assert counter.frame_count == 1 and rel_err(out, model(x)) < 1e-5


def test_decoder_layer_fuses_add_and_norm_and_stacks_qkv(monkeypatch):
    """A decoder layer's `h = r + h; r = h; h = norm(h)` becomes one add + RMSNorm call, and its attention's q / k / v
    projections one stacked projection; the same outputs. merge_qkv=False keeps the three."""
    model = nn.Sequential(DecoderLayer(), DecoderLayer()).to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        apart = copy.deepcopy(model)
        assert patch_model(model) == swaps(rms_norm=4, add_rms_norm=2, gated_mlp=2, qkv=2)
        assert patch_model(apart, merge_qkv=False)["qkv"] == 0
        assert not hasattr(model[0].self_attn, "q_proj") and model[0].self_attn.qkv_sizes == [64, 32, 32]
        assert isinstance(apart[0].self_attn.q_proj, nn.Linear) and not hasattr(apart[0].self_attn, "qkv_proj")
        calls = []
        norm = RMSNorm.forward

        def spy(self, h, residual=None, quant=None):
            calls.append((residual is not None, quant))
            return norm(self, h, residual, quant)
        monkeypatch.setattr(RMSNorm, "forward", spy)
        for m in (model, apart):
            assert rel_err(m(x), before) < 1e-5
        # each layer: its input norm, then the fused add + norm (its rows not quantized: a bf16 MLP)
        assert calls == [(False, None), (True, None)] * 4


def test_fp8_mlp_takes_its_rows_quantized_from_the_norm(monkeypatch):
    """In an fp8 model (quantize_model(model, "fp8") before or after patch_model) the fused add + norm ahead of the MLP
    quantizes its rows for the MLP's Fp8Linear gate and up (rms_norm(..., quant="fp8")): no quantize_rows kernel for
    them, only for the attention's projections. The layers' output is within fp8's precision of the bf16 model's and
    of the same model quantizing the MLP's input apart; one graph under torch.compile."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from rooftop import quantize_model
    from rooftop.ops import _support, activations, rms_norm as rms_norm_mod
    bf16 = nn.Sequential(DecoderLayer(), DecoderLayer()).to(DEVICE).bfloat16()
    x = torch.randn(2, 5, 64, device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        before = bf16(x)
        first, last = copy.deepcopy(bf16), copy.deepcopy(bf16)
        quantize_model(first, bits="fp8")
        patch_model(first)
        patch_model(last)
        quantize_model(last, bits="fp8")
        monkeypatch.setattr(_support, "PLANS_ENABLED", False)  # every call its full path, to be counted
        norms, rows = [], []
        real_norm, real_rows = rms_norm_mod._add_rms_norm_quant_op, activations._gated_quant_op
        monkeypatch.setattr(rms_norm_mod, "_add_rms_norm_quant_op", lambda *a: norms.append(a[-1]) or real_norm(*a))
        monkeypatch.setattr(activations, "_gated_quant_op", lambda *a: rows.append(a[2:]) or real_rows(*a))
        outs = [m(x) for m in (first, last)]
        assert torch.equal(outs[0], outs[1])
        assert rel_err(outs[0], before) < 0.15
        # each layer quantizes rows apart only for its q / k / v and o projections; its MLP's come from the norm
        # and the SwiGLU
        assert norms == ["fp8"] * 2 * 2
        assert rows.count(("none", "fp8")) == 2 * 2 * 2 and rows.count(("silu", "fp8")) == 2 * 2
        monkeypatch.setattr(GatedMLP, "input_quant", None)  # the MLP quantizes its input itself
        apart = first(x)
        assert rel_err(outs[0], apart) < 0.05
        torch._dynamo.reset()
        counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
        monkeypatch.undo()
        compiled = torch.compile(first, backend=counter, fullgraph=True)(x)
        # inductor rounds the bf16 ops between the fp8 linears its own way, and an activation that crosses an e4m3
        # rounding boundary moves by a step (6%): 3.7e-2 on an H100 (session 58), within the fp8 path's 0.05
        assert counter.frame_count == 1 and rel_err(compiled, outs[0]) < 0.05


class Reassigned(Attention):
    def forward(self, hidden_states):
        query = self.q_proj(hidden_states)
        hidden_states = hidden_states * 2  # k and v see another input: no stacking
        return self.o_proj(query * self.k_proj(hidden_states).sum(-1, keepdim=True)
                           + self.v_proj(hidden_states).sum(-1, keepdim=True))


class ResidualElsewhere(DecoderLayer):
    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states))
        hidden_states = residual + hidden_states
        normed = self.post_attention_layernorm(hidden_states)  # not the pattern: the residual is h itself
        return hidden_states + self.mlp(normed)


class Doubled(DecoderLayer):
    def forward(self, hidden_states):
        hidden_states = self.self_attn(self.input_layernorm(hidden_states))
        hidden_states = hidden_states + hidden_states  # no residual: h + h
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        return residual + self.mlp(hidden_states)


@pytest.mark.parametrize("module, rewrite", [(Reassigned, "qkv"), (ResidualElsewhere, "add_rms_norm"),
                                             (Doubled, "add_rms_norm")])
def test_forward_rewrites_leave_other_patterns(module, rewrite):
    """Where the statements are not the pattern the module keeps its forward (and its q / k / v projections)."""
    model = module().to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert patch_model(model)[rewrite] == 0 and "forward" not in vars(model)
        assert rel_err(model(x), before) < 1e-5


def test_rewritten_layers_compile_without_graph_break():
    """Decoder layers with the fused add + norm and the stacked q / k / v are one graph under torch.compile."""
    from torch._dynamo.testing import CompileCounterWithBackend

    model = nn.Sequential(DecoderLayer(), DecoderLayer()).to(DEVICE)
    patch_model(model)
    x = torch.randn(2, 5, 64, device=DEVICE)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    with torch.no_grad():
        out = torch.compile(model, backend=counter, fullgraph=True)(x)
        assert counter.frame_count == 1 and rel_err(out, model(x)) < 1e-5



@pytest.mark.parametrize("arch, extra, counts", [
    ("Mistral", {}, {}), ("Qwen2", {}, {}), ("Qwen3", {"head_dim": 16}, {"rms_norm": 9}),
    ("Gemma2", {"head_dim": 16}, {"rms_norm": 9}),
    # LayerNorms (Cohere's own class: no bias) before a parallel attention and MLP; GPT-J RoPE, cos pairs-repeated
    ("Cohere", {}, {"rms_norm": 0, "add_rms_norm": 0, "layer_norm": 3}),
    # GLM: GPT-J partial RoPE, cos halves-repeated; gate and up packed in one projection
    ("Glm", {"head_dim": 16, "pad_token_id": 0}, {}),
    # Phi-3: q, k and v packed already, gate and up too, partial rotary, dropouts (of p = 0) in the residual adds
    ("Phi3", {"pad_token_id": 0, "partial_rotary_factor": 0.5}, {"qkv": 0}),
    # torch's LayerNorm (a bias) and its residual add fused
    ("Starcoder2", {}, swaps(layer_norm=5, add_layer_norm=2, qkv=2, rope=2, decode_attention=2, kv_append=2,
                             rope_append=2)),
    # GPT-NeoX (Pythia): q, k and v interleaved by head in one query_key_value, partial rotary, a parallel residual,
    # its cache passed as layer_past: found by its forward picking an attention function
    ("GPTNeoX", {}, swaps(layer_norm=5, rope=2, decode_attention=2, kv_append=2, rope_append=2)),
    # norms scaling by 1 + weight under names other than Gemma's
    ("VaultGemma", {"head_dim": 16}, {}),
    ("Qwen3_5Text", {"head_dim": 16, "layer_types": ["full_attention"] * 2}, {"rms_norm": 9}),
    # mixtures of experts: the experts (3-D gate_up_proj / down_proj) by rooftop.moe_experts, no dense MLP
    ("Mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2}, {"gated_mlp": 0, "moe_experts": 2}),
    ("Qwen3Moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48, "head_dim": 16},
     {"rms_norm": 9, "gated_mlp": 0, "moe_experts": 2}),
    # a shared expert beside the routed ones (a gated MLP of its own); OLMoE's q / k norms
    ("Qwen2Moe", {"num_experts": 4, "moe_intermediate_size": 48, "shared_expert_intermediate_size": 96},
     {"moe_experts": 2}),
    ("Olmoe", {"num_experts": 4, "num_experts_per_tok": 2}, {"rms_norm": 9, "gated_mlp": 0, "moe_experts": 2}),
])
def test_patch_other_transformers_architectures(arch, extra, counts):
    """The duck-typed swaps and the forward rewrites find their patterns in other Llama-style architectures (Qwen3's
    q / k norms; Gemma2's four norms a layer, whose add goes into the pre-feed-forward norm), leave what they do not
    compute (Cohere's RoPE), and keep the outputs."""
    transformers = pytest.importorskip("transformers")
    config_class = getattr(transformers, f"{arch}Config", None)
    model_class = getattr(transformers, f"{arch.removesuffix('Text')}ForCausalLM", None)
    if config_class is None or model_class is None:
        pytest.skip(f"this transformers has no {arch}")
    config = config_class(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **extra)
    config._attn_implementation = "eager"
    model = model_class(config).to(DEVICE).eval()
    ids = torch.randint(0, 128, (2, 12), device=DEVICE)
    with torch.no_grad():
        before, short_before = model(ids).logits, model(ids[:1, :6]).logits  # 6 tokens: moe_experts' kernels
        assert patch_model(model) == {**LLAMA_COUNTS, **counts}
        assert rel_err(model(ids).logits, before) < (1e-2 if HAS_CUDA else 1e-4)
        assert rel_err(model(ids[:1, :6]).logits, short_before) < (1e-2 if HAS_CUDA else 1e-4)


class BiasedRMSNorm(nn.Module):  # an RMSNorm by name, with a bias rooftop's does not have
    def __init__(self, hidden):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.rand(hidden) + 0.5), nn.Parameter(torch.randn(hidden))
        self.eps = 1e-6

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight + self.bias


class OnePlusLayerNorm(nn.LayerNorm):  # Nemotron's LayerNorm1P: scales by 1 + weight, which rooftop's does not
    def forward(self, x):
        return nn.functional.layer_norm(x, self.normalized_shape, self.weight + 1, self.bias, self.eps)


class BiaslessLayerNorm(nn.Module):  # Cohere's: its own class, no bias
    def __init__(self, hidden):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.rand(hidden) + 0.5), 1e-5

    def forward(self, x):
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight, None, self.variance_epsilon)


def test_norms_swapped_only_where_they_compute_the_same():
    """A norm module is swapped where rooftop's gives its output on random rows: an RMSNorm scaling by weight or by
    1 + weight (the scaling found so, whatever the class's name), torch's LayerNorm and a LayerNorm class of a model's
    own; one that computes something else (an RMSNorm with a bias, a LayerNorm scaling by 1 + weight) is kept."""
    model = nn.Sequential(LlamaRMSNorm(64), GemmaRMSNorm(64), BiasedRMSNorm(64), nn.LayerNorm(64),
                          BiaslessLayerNorm(64), OnePlusLayerNorm(64)).to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        for norm in (model[3], model[5]):
            norm.weight.uniform_(-0.5, 0.5), norm.bias.normal_()
        before = model(x)
        assert patch_model(model) == swaps(rms_norm=2, layer_norm=2)
        assert (model[0].offset, model[1].offset) == (0.0, 1.0)
        assert [type(m) for m in model[2:]] == [BiasedRMSNorm, LayerNorm, LayerNorm, OnePlusLayerNorm]
        assert rel_err(model(x), before) < 1e-5


def _phi3_partial_rotary(attention: str):
    """A tiny Phi-3 (random weights) rotating half of each 16-wide head, on DEVICE."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "Phi3ForCausalLM"):
        pytest.skip("this transformers has no Phi3")
    config = transformers.Phi3Config(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                     pad_token_id=0, partial_rotary_factor=0.5)
    config._attn_implementation = attention
    return transformers.Phi3ForCausalLM(config).to(DEVICE).eval()


class T5LayerNorm(LlamaRMSNorm):  # T5's: named LayerNorm, scales without subtracting the mean
    pass


class FlatRMSNorm(LlamaRMSNorm):  # the same values in another shape
    def forward(self, x):
        return super().forward(x).flatten()


class ChannelsFirstLayerNorm(nn.LayerNorm):  # ConvNeXt's: takes [B, C, H, W] only
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class TwoInputMLP(LlamaMLP):  # a forward of another signature
    def forward(self, x, conditioning):
        return super().forward(x + conditioning)


def test_swaps_refused_where_the_probe_tells_them_apart():
    """The probe row has a mean, so T5's scaling-only norm named LayerNorm is kept at model widths (a zero-mean row
    hid the mean subtraction to ~1 / sqrt(width)); the closer scaling wins where both are near (Gemma weights of ~25);
    a module whose output has another shape, or that takes no such row (another layout, another signature), is kept,
    not an error."""
    gemma = GemmaRMSNorm(2048)
    with torch.no_grad():
        gemma.weight.uniform_(24.0, 26.0)
    model = nn.ModuleList([T5LayerNorm(2048), gemma, FlatRMSNorm(64), ChannelsFirstLayerNorm(64),
                           TwoInputMLP(64, 96, nn.SiLU())]).to(DEVICE)
    assert patch_model(model) == swaps(rms_norm=1)
    assert [type(m) for m in model] == [T5LayerNorm, RMSNorm, FlatRMSNorm, ChannelsFirstLayerNorm, TwoInputMLP]
    assert model[1].offset == 1.0


def test_meta_device_norms_tried_on_a_cpu_copy():
    """On the meta device the norms are tried on a CPU copy with random weights (the scaling, a LayerNorm scaling by
    1 + weight kept); an MLP, with nothing to try it on, is left. Loaded with the real weights afterwards, the model
    gives the original's outputs."""
    def build():
        torch.manual_seed(0)
        return nn.Sequential(LlamaRMSNorm(64), GemmaRMSNorm(64), nn.LayerNorm(64), OnePlusLayerNorm(64),
                             LlamaMLP(64, 96, nn.SiLU()))
    model, real = build().to("meta"), build().to(DEVICE)
    assert patch_model(model) == swaps(rms_norm=2, layer_norm=1)
    assert [type(m) for m in model] == [RMSNorm, RMSNorm, LayerNorm, OnePlusLayerNorm, LlamaMLP]
    assert (model[0].offset, model[1].offset) == (0.0, 1.0)
    model.load_state_dict(real.state_dict(), assign=True)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        assert rel_err(model(x), real(x)) < 1e-5


class DroppedDecoderLayer(DecoderLayer):  # Phi-3's residual add: the attention's output through a dropout
    def __init__(self, drop):
        super().__init__()
        self.resid_drop = drop

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states))
        hidden_states = residual + self.resid_drop(hidden_states)
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


@pytest.mark.parametrize("drop, fused", [(nn.Dropout(0.0), 1), (nn.Identity(), 1), (nn.Dropout(0.1), 0)])
def test_add_norm_through_a_dropout_only_where_it_keeps_its_input(drop, fused):
    """`r + self.drop(h)` fuses into the norm where the dropout keeps its input in training too (p = 0, nn.Identity),
    not where it drops some (p > 0: the model may be trained); patching leaves the caller's random streams as they
    were."""
    model = DroppedDecoderLayer(drop).to(DEVICE).eval()
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        torch.manual_seed(1)
        expected = torch.rand(4), torch.rand(4, device=DEVICE)
        torch.manual_seed(1)
        assert patch_model(model)["add_rms_norm"] == fused
        assert all(torch.equal(a, b) for a, b in zip((torch.rand(4), torch.rand(4, device=DEVICE)), expected))
        assert rel_err(model(x), before) < 1e-5


def test_rope_form_takes_only_even_rotary_widths():
    """The kernel rotates pairs: a partial cos / sin of odd width goes to the model's own function."""
    from rooftop.integrations.hf import _RopeForm

    q, k = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8)
    form = _RopeForm(interleaved=False, pairs=False, partial=True)
    assert form.takes(q, k, torch.randn(3, 4), torch.randn(3, 4))
    assert not form.takes(q, k, torch.randn(3, 3), torch.randn(3, 3))


def test_partial_rotary_takes_the_kernel(monkeypatch):
    """Phi-3's partial rotary (cos / sin narrower than the head, the rest passed through) goes to rooftop.apply_rope
    with that rotary_dim, and the outputs are kept."""
    model = _phi3_partial_rotary("eager")
    ids = torch.randint(0, 128, (2, 12), device=DEVICE)
    rotary_dims = []
    real = rooftop.integrations.hf.apply_rope
    monkeypatch.setattr(rooftop.integrations.hf, "apply_rope",
                        lambda *a, **k: rotary_dims.append(k["rotary_dim"]) or real(*a, **k))
    with torch.no_grad():
        before = model(ids).logits
        patch_model(model)
        assert rel_err(model(ids).logits, before) < (1e-2 if HAS_CUDA else 1e-4)
    assert rotary_dims == [8, 8]  # head_dim 16, half of it rotated, in each layer


def test_partial_rotary_decode_steps_append_with_the_rope(monkeypatch):
    """Phi-3's decode steps over a static cache: the partial RoPE and the cache append as one kernel
    (apply_rope_append_kv with its rotary_dim), the same greedy logits as the stock model's."""
    stock = _phi3_partial_rotary("sdpa")
    patched = copy.deepcopy(stock)
    assert patch_model(patched)["rope_append"] == 2
    rotary_dims = []
    real = rooftop.integrations.hf.apply_rope_append_kv
    monkeypatch.setattr(rooftop.integrations.hf, "apply_rope_append_kv",
                        lambda *a, **k: rotary_dims.append(k["rotary_dim"]) or real(*a, **k))
    ids = torch.randint(1, 128, (2, 10), device=DEVICE)
    logits = []
    with torch.no_grad():
        for model in (stock, patched):
            out = model.generate(ids, max_new_tokens=3, do_sample=False, cache_implementation="static",
                                 output_logits=True, return_dict_in_generate=True, pad_token_id=0)
            logits.append(torch.stack(out.logits))
    assert rel_err(logits[1], logits[0]) < (1e-2 if HAS_CUDA else 1e-4)
    assert rotary_dims == [8] * 2 * 2  # each decode step after the first token, in each layer


@pytest.mark.parametrize("arch, extra, pairs", [("Cohere", {}, True),
                                                ("Glm", {"head_dim": 16, "pad_token_id": 0}, False)])
def test_gptj_rotary_takes_the_kernel(arch, extra, pairs, monkeypatch):
    """GPT-J-style RoPE goes to rooftop.apply_rope with interleaved=True: Cohere's cos / sin (each value twice in a
    row) as their every other column, a view; GLM's (partial, halves repeated) as they come. Outputs kept."""
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, f"{arch}ForCausalLM"):
        pytest.skip(f"this transformers has no {arch}")
    config = getattr(transformers, f"{arch}Config")(vocab_size=128, hidden_size=64, intermediate_size=160,
                                                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                    max_position_embeddings=64, **extra)
    config._attn_implementation = "eager"
    model = getattr(transformers, f"{arch}ForCausalLM")(config).to(DEVICE).eval()
    ids = torch.randint(0, 128, (2, 12), device=DEVICE)
    calls = []
    real = rooftop.integrations.hf.apply_rope
    monkeypatch.setattr(rooftop.integrations.hf, "apply_rope",
                        lambda q, k, cos, sin, **kw: calls.append((kw["interleaved"], cos.stride(-1)))
                        or real(q, k, cos, sin, **kw))
    with torch.no_grad():
        before = model(ids).logits
        assert patch_model(model)["rope"] == 2
        assert rel_err(model(ids).logits, before) < (1e-2 if HAS_CUDA else 1e-4)
    assert calls == [(True, 2 if pairs else 1)] * 2


class PackedUpFirst(nn.Module):  # a packed projection whose first half is the up projection's
    def __init__(self, hidden=64, inter=96):
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, x):
        up, gate = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * self.activation_fn(gate))


class SparseGate(LlamaMLP):  # Gemma-3n's activation sparsity: the gate's small values dropped before the activation
    def forward(self, x):
        gate = self.gate_proj(x)
        gate = torch.where(gate > gate.mean(-1, keepdim=True), gate, -10.0)
        return self.down_proj(self.act_fn(gate) * self.up_proj(x))


def test_mlps_swapped_only_where_they_compute_the_same():
    """An MLP becomes a GatedMLP only where that gives its output on random rows of its own weights: a packed
    gate_up_proj whose first half is the gate (not the up projection's), and a gate_proj / up_proj one whose forward
    is the plain gated product (not one dropping small gate values)."""
    class GateFirst(PackedUpFirst):
        def forward(self, x):
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
            return self.down_proj(up * self.activation_fn(gate))

    model = nn.Sequential(PackedUpFirst(), GateFirst(), SparseGate(64, 96, nn.SiLU()), LlamaMLP(64, 96, nn.SiLU()))
    model = model.to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert patch_model(model)["gated_mlp"] == 2
        assert [type(m) for m in model] == [PackedUpFirst, GatedMLP, SparseGate, GatedMLP]
        assert rel_err(model(x), before) < 1e-5


ROPE_THEN_UPDATE = """
def forward(self, x, cos, sin, past_key_value=None):
    q, k, v = self.q(x), self.k(x), self.v(x)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    {between}
    if past_key_value is not None:
        cache_kwargs = {{"sin": sin, "cos": cos}}
        k, v = past_key_value.update(k, v, self.layer_idx, cache_kwargs)
    return q, k, v
"""


@pytest.mark.parametrize("between, fused", [
    ("pass", True),  # transformers 5.17's form (5.24's has no cache_kwargs)
    ("scale = 2", True),
    ("k = k * 2", False),  # k read between the RoPE and the update
    ("k = v", False),  # k assigned: the update's k is not the rotated one
    ("v = v.float()", False),  # v reassigned: the RoPE statement cannot take it
    ("past_key_value = None", False),
])
def test_rope_and_cache_update_rewritten_together(between, fused):
    """The RoPE statement takes v, the cache and the layer index (and the update what the RoPE appended) only where
    nothing between the two reads k or assigns what they share."""
    import ast
    import textwrap

    from rooftop.integrations import hf

    node = ast.parse(textwrap.dedent(ROPE_THEN_UPDATE.format(between=between))).body[0]
    assert hf._cache_update_rewrite(node) == 1
    assert hf._rope_append_rewrite(node) == int(fused)
    source = ast.unparse(node)
    assert ("k, v = _rooftop_cache_update(past_key_value, k, v, self.layer_idx, cache_kwargs, _rooftop_module=self"
            in source)  # the module passed at call time: a deep copy's own
    assert ("q, k, _rooftop_appended = _rooftop_rope_append(q, k, v, cos, sin, past_key_value, self.layer_idx, "
            "_rooftop_module=self)" in source) == fused
    assert ("_rooftop_appended=_rooftop_appended" in source) == fused
    node = ast.parse("def forward(this, /, x, past_key_value):\n    k, v = past_key_value.update(x, x, 0)").body[0]
    assert hf._cache_update_rewrite(node) == 1 and "_rooftop_module=this)" in ast.unparse(node)  # positional-only


def test_patch_keeps_norm_eps_and_exact_gelu_and_bias_mismatch():
    model = Layer(lambda h: LlamaRMSNorm(h, eps=0.5)).to(DEVICE)
    x = 0.05 * torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert patch_model(model)["rms_norm"] == 2
        assert rel_err(model(x), before) < 1e-5
    exact = Layer(LlamaRMSNorm, act=nn.GELU()).to(DEVICE)  # exact (erf) GELU: no fused kernel
    assert patch_model(exact)["gated_mlp"] == 0
    assert rooftop.integrations.hf.stacked_projection(nn.Linear(8, 4, bias=True), nn.Linear(8, 4, bias=False)) is None
    assert rooftop.integrations.hf.stacked_projection(nn.Linear(8, 4, bias=False), nn.Linear(8, 4, bias=True)) is None


def test_add_norm_rewrite_needs_rooftops_norm():

    class LayerNormAfterAdd(DecoderLayer):
        def __init__(self):
            super().__init__()
            self.post_attention_layernorm = nn.LayerNorm(64)

    model = LayerNormAfterAdd().to(DEVICE)
    x = torch.randn(2, 5, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert patch_model(model)["add_rms_norm"] == 0
        assert rel_err(model(x), before) < 1e-5
