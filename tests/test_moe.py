import copy
import subprocess
import sys

import pytest
import torch

import rooftop
from conftest import DEVICE, HAS_CUDA, TOL, compiler_env, rel_err
from rooftop import registry
from rooftop.ops import _support, moe
from rooftop.ops.moe import moe_experts_eager, moe_experts_reference


def _inputs(T, E, k, H, I, dtype=torch.bfloat16, index_dtype=torch.int64):
    """Fresh random tokens, routing (any expert, repeats across tokens allowed) and experts."""
    x = torch.randn(T, H, device=DEVICE, dtype=dtype)
    index = torch.randint(0, E, (T, k), device=DEVICE).to(index_dtype)
    weights = torch.rand(T, k, device=DEVICE).softmax(-1)
    gate_up = torch.randn(E, 2 * I, H, device=DEVICE, dtype=dtype) * H**-0.5
    down = torch.randn(E, H, I, device=DEVICE, dtype=dtype) * max(I, 1)**-0.5
    return x, index, weights, gate_up, down


@pytest.fixture(params=["per-pair", "grouped", "sorted"])
def path(request, monkeypatch):
    """Each of moe_experts' three paths on the same calls (the shape alone would pick one; the grouped one only up to
    PAIRS_MAX pairs)."""
    monkeypatch.setattr(moe, "_path", lambda tokens, pairs, *a: "per-pair" if request.param == "grouped"
                        and pairs > moe.PAIRS_MAX else request.param)
    _support.clear_plans()  # a plan keeps the path its signature's first call took
    yield request.param
    _support.clear_plans()


@pytest.mark.parametrize("activation", ["silu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 4, 2, 64, 48), (5, 6, 3, 70, 33), (2, 3, 1, 300, 260)])
def test_matches_reference(shape, dtype, activation, path):
    """Decode-sized calls (one token, several; k of 1-3; H, I ragged against the tiles and past one k-tile), each
    token's experts at random (tokens sharing experts), int64 indices."""
    inputs = _inputs(*shape, dtype=dtype)
    out = rooftop.moe_experts(*inputs, activation=activation)
    assert out.shape == inputs[0].shape and out.dtype == dtype
    assert rel_err(out, moe_experts_reference(*inputs, activation=activation)) < TOL[dtype]


def test_sentinels_strides_and_int32_indices(path):
    """An index outside [0, E) (transformers' expert-parallel sentinel E, or -1) adds nothing; int32 indices; x rows
    of a wider tensor, strided router weights, gate_up / down as views of larger storage; the eager loop (the
    sentinel skipped as transformers' does) agrees."""
    T, E, k, H, I = 4, 5, 2, 64, 40
    x, index, weights, gate_up, down = _inputs(T, E, k, H, I, index_dtype=torch.int32)
    index[0, 1], index[2, 0] = E, -1
    wide = torch.randn(T, H + 16, device=DEVICE, dtype=torch.bfloat16)[:, 8:H + 8].copy_(x)
    strided = torch.rand(T, 2 * k, device=DEVICE)[:, ::2]
    strided[0, 1] = strided[2, 0] = 1.0  # the sentinels' pairs weigh enough to show (a weight of 0.0x would not)
    big = torch.randn(E + 1, 2 * I, H, device=DEVICE, dtype=torch.bfloat16)[1:].copy_(gate_up)
    down_view = torch.randn(E, H + 8, I, device=DEVICE, dtype=torch.bfloat16)[:, 8:].copy_(down)
    assert strided.stride() == (2 * k, 2) and down_view.stride(1) == I and down_view.storage_offset() > 0
    ref = moe_experts_reference(x, index, strided, gate_up, down)
    assert rel_err(rooftop.moe_experts(wide, index, strided, big, down_view), ref) < TOL[torch.bfloat16]
    skipped = moe_experts_reference(x, index.clamp(0, E - 1), strided, gate_up, down)
    assert rel_err(skipped, ref) > 0.05  # the sentinels mattered
    assert rel_err(moe_experts_eager(x, torch.where(index < 0, E, index).long(), strided, gate_up, down),
                   ref) < TOL[torch.bfloat16]


def test_repeated_calls_replay_on_fresh_inputs(path):
    """A signature's first call is recorded and later ones replay its launches (the h workspace, the partials and the
    sorted path's layout and rows allocated anew): still right on fresh inputs. No tokens, no hidden or no
    intermediate width: an empty or zero result."""
    _support.clear_plans()
    for _ in range(4):
        inputs = _inputs(3, 4, 2, 64, 48)
        assert rel_err(rooftop.moe_experts(*inputs), moe_experts_reference(*inputs)) < TOL[torch.bfloat16]
    assert len(rooftop.moe_experts.plans) == 1
    x, index, weights, gate_up, down = _inputs(0, 4, 2, 64, 48)
    assert rooftop.moe_experts(x, index, weights, gate_up, down).shape == (0, 64)
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 0)
    assert torch.equal(rooftop.moe_experts(x, index, weights, gate_up, down), torch.zeros_like(x))


def test_bad_input():
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 48)
    with pytest.raises(TypeError, match="top_k_index"):
        rooftop.moe_experts(x, index.float(), weights, gate_up, down)
    with pytest.raises(ValueError, match="top_k_index"):
        rooftop.moe_experts(x, index[:1], weights, gate_up, down)
    with pytest.raises(ValueError, match="top_k_weights"):
        rooftop.moe_experts(x, index, weights[:, :1], gate_up, down)
    with pytest.raises(ValueError, match="gate_up"):
        rooftop.moe_experts(x, index, weights, gate_up[:, :, :32], down)
    with pytest.raises(ValueError, match="down"):
        rooftop.moe_experts(x, index, weights, gate_up, down[:, :, :40])
    with pytest.raises(TypeError, match="gate_up"):
        rooftop.moe_experts(x, index, weights, gate_up.float(), down)
    with pytest.raises(ValueError, match="down"):
        rooftop.moe_experts(x, index, weights, gate_up, down.transpose(1, 2).contiguous().transpose(1, 2))
    with pytest.raises(ValueError, match="activation"):
        rooftop.moe_experts(x, index, weights, gate_up, down, activation="relu")
    with pytest.raises(ValueError, match="x"):
        rooftop.moe_experts(x[None], index, weights, gate_up, down)
    with pytest.raises(TypeError, match="x"):
        rooftop.moe_experts(x.int(), index, weights, gate_up, down)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 3, 2, 64, 600), (4, 5, 2, 70, 33)])
def test_biases_and_gpt_oss_gate(shape, dtype, path):
    """Biases on both projections (the down one once, with I split over programs at one token) and gpt-oss's clamped
    gate, with x large enough that the clamp bites on most rows; plain silu with biases; int8 experts with both; the
    eager loop agrees."""
    x, index, weights, gate_up, down = _inputs(*shape, dtype=dtype)
    x = x * 30
    E, H, I = down.shape
    biases = dict(gate_up_bias=torch.randn(E, 2 * I, device=DEVICE, dtype=dtype) * 3,
                  down_bias=torch.randn(E, H, device=DEVICE, dtype=dtype) * 3)  # moving the sum by 17% or more
    gu = gate_up[index[0, 0]].double() @ x[0].double()
    assert (gu.abs() > 7).double().mean() > 0.5  # the clamp matters
    for activation, extra in (("swiglu_oai", dict(swiglu_alpha=1.702, swiglu_limit=7.0)), ("silu", {})):
        out = rooftop.moe_experts(x, index, weights, gate_up, down, activation, **biases, **extra)
        ref = moe_experts_reference(x, index, weights, gate_up, down, activation, **biases, **extra)
        assert rel_err(out, ref) < TOL[dtype]
        assert rel_err(moe_experts_eager(x, index, weights, gate_up, down, activation, **biases, **extra),
                       ref) < TOL[dtype]
    assert rel_err(moe_experts_reference(x, index, weights, gate_up, down, "swiglu_oai"),
                   moe_experts_reference(x, index, weights, gate_up, down, "swiglu_oai", **biases)) > 0.05
    gu8, gu_scale, dn8, dn_scale = moe.quantize_experts(gate_up, down, "int8")
    out = rooftop.moe_experts(x, index, weights, gu8, dn8, "swiglu_oai", gu_scale, dn_scale, **biases)
    ref = moe_experts_reference(x, index, weights, gu8, dn8, "swiglu_oai", gu_scale, dn_scale, **biases)
    assert rel_err(out, ref) < TOL[dtype]


def test_bias_and_gate_bad_input():
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 48)
    with pytest.raises(ValueError, match="gate_up_bias"):
        rooftop.moe_experts(x, index, weights, gate_up, down, gate_up_bias=torch.zeros(4, 48, device=DEVICE))
    with pytest.raises(TypeError, match="down_bias"):
        rooftop.moe_experts(x, index, weights, gate_up, down, down_bias=torch.zeros(4, 64, device=DEVICE).int())
    with pytest.raises(ValueError, match="swiglu_limit"):
        rooftop.moe_experts(x, index, weights, gate_up, down, "swiglu_oai", swiglu_limit=float("inf"))


# quant -> (codes dtype, the codes' error on a random weight row, the op's error against unquantized experts)
QUANTIZED = {"fp8": (torch.float8_e4m3fn, 0.05, 0.1), "int8": (torch.int8, 0.01, 0.02),
             "int4": (torch.int32, 0.12, 0.3)}


def _int4_codes(words: torch.Tensor) -> torch.Tensor:
    """int4 experts' codes c in [0, 15] [..., K] from their words [..., K / 8] (plain PyTorch, code i in bits 4i)."""
    return torch.stack([(words >> (4 * i)) & 15 for i in range(8)], -1).flatten(-2)


@pytest.mark.parametrize("quant", list(QUANTIZED))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 3, 2, 64, 600), (5, 6, 3, 70, 33)])
def test_quantized_experts(shape, dtype, quant, path):
    """fp8 / int8 experts (weight-only, a scale per output row) and int4 (groups of 32 where the first shape's rows
    hold several a k-tile, 128 where a k-tile lies in one; the widths made whole groups): against the reference on
    the same codes and scales (one token: the down projection split over programs), and within the format's step of
    the unquantized experts (e4m3: 3 mantissa bits; int8: 127 levels a side; int4: 7)."""
    codes_dtype, weight_tol, out_tol = QUANTIZED[quant]
    group = (32 if shape[0] == 1 else 128) if quant == "int4" else None
    if group:
        shape = (*shape[:3], *(-(-n // group) * group for n in shape[3:]))  # 64 x 608 (32), 128 x 128 (128)
    x, index, weights, gate_up, down = _inputs(*shape, dtype=dtype)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, quant, group or 128)
    assert gu.dtype == dn.dtype == codes_dtype
    if group:
        assert gu.shape == (*gate_up.shape[:2], gate_up.shape[2] // 8) and dn.shape == (*down.shape[:2], shape[4] // 8)
        assert gu_scale.shape == (*gate_up.shape[:2], shape[3] // group)
        assert dn_scale.shape == (*down.shape[:2], shape[4] // group)
        codes = _int4_codes(gu).double() - 8
        assert codes.min() >= -8 and codes.max() <= 7 and int((codes == -8).sum()) == 0  # symmetric: +-7
        assert codes.abs().unflatten(-1, (-1, group)).amax(-1).min() == 7  # each group's largest at the top code
        assert rel_err(codes * gu_scale.double().repeat_interleave(group, -1), gate_up) < weight_tol
        assert rel_err(moe.dequantize_experts(gu, gu_scale), gate_up) < weight_tol
    else:
        assert gu_scale.shape == gate_up.shape[:2] and dn_scale.shape == down.shape[:2]
        assert rel_err(gu.double() * gu_scale.double()[..., None], gate_up) < weight_tol
        assert gu.double().abs().amax(-1).min() >= {"fp8": 448, "int8": 127}[quant]  # each row's largest: top code
    out = rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale)
    assert out.dtype == dtype
    assert rel_err(out, moe_experts_reference(x, index, weights, gu, dn, "silu", gu_scale, dn_scale)) < TOL[dtype]
    assert rel_err(out, moe_experts_reference(x, index, weights, gate_up, down)) < out_tol


@pytest.mark.parametrize("group", [128, 64])
def test_int4_group_sizes_and_scales(path, group):
    """int4 experts with gate_up in groups of 128 or 64 (H = 384: the per-pair kernel's 256-wide k-tiles end half past
    the row) and down in groups of 32, fp16 x with fp16 scales as strided views, a sentinel and -1 among int32 indices:
    as the reference on the same codes and scales; experts of no intermediate width give zeros (their scales: no
    groups)."""
    x, index, weights, gate_up, down = _inputs(3, 4, 2, 384, 128, dtype=torch.float16, index_dtype=torch.int32)
    index[0, 1], index[2, 0] = 4, -1
    gu, gu_scale = moe.quantize_experts(gate_up, down, "int4", group)[:2]
    dn, dn_scale = moe.quantize_experts(gate_up, down, "int4", 32)[2:]
    assert gu_scale.shape[-1] == 384 // group and dn_scale.shape[-1] == 4
    gu_scale, dn_scale = (torch.zeros(*t.shape[:2], 2 * t.shape[2], device=DEVICE, dtype=torch.float16)[..., ::2]
                          .copy_(t) for t in (gu_scale, dn_scale))
    assert not gu_scale.is_contiguous()
    out = rooftop.moe_experts(x, index, weights, gu, dn, "gelu", gate_up_scale=gu_scale, down_scale=dn_scale)
    ref = moe_experts_reference(x, index, weights, gu, dn, "gelu", gu_scale, dn_scale)
    assert rel_err(out, ref) < TOL[torch.float16]
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 0)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, "int4", 32)
    assert dn_scale.shape == (4, 64, 0) and moe.dequantize_experts(dn, dn_scale).shape == (4, 64, 0)
    assert torch.equal(rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale),
                       torch.zeros_like(x))


def test_int4_bf16_passes_and_views(path):
    """int4 experts with bf16 x (on a GPU the grouped kernels' mma.sync path): 20 pairs on one expert (two passes of
    GROUP members), x a row view one element off 16-byte alignment, gate_up in groups of 64 and down in groups of 32
    over I = 192 (its second k-step of 128 half past it): as the reference on the same codes and scales."""
    x, index, weights, gate_up, down = _inputs(20, 3, 2, 128, 192, dtype=torch.bfloat16)
    index[:, 0], index[:, 1] = 1, (torch.arange(20, device=DEVICE) % 2) * 2  # expert 1 in every token
    x = torch.empty(x.numel() + 1, device=DEVICE, dtype=x.dtype)[1:].view_as(x).copy_(x)
    gu, gu_scale = moe.quantize_experts(gate_up, down, "int4", 64)[:2]
    dn, dn_scale = moe.quantize_experts(gate_up, down, "int4", 32)[2:]
    out = rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale)
    ref = moe_experts_reference(x, index, weights, gu, dn, "silu", gu_scale, dn_scale)
    assert rel_err(out, ref) < TOL[torch.bfloat16]


def test_quantized_bad_input():
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 48)
    with pytest.raises(ValueError, match="quant"):
        moe.quantize_experts(gate_up, down, "int3")
    with pytest.raises(ValueError, match="group_size"):
        moe.quantize_experts(gate_up, down, "int4", 16)
    with pytest.raises(ValueError, match="down's rows"):  # I = 48: not whole groups of 32
        moe.quantize_experts(gate_up, down, "int4", 32)
    x4, index4, weights4, gate_up4, down4 = _inputs(2, 4, 2, 64, 64)
    gu4, gu4_scale, dn4, dn4_scale = moe.quantize_experts(gate_up4, down4, "int4", 32)
    with pytest.raises(ValueError, match="down_scale must be .* group size of 32, 64, 128"):  # groups of 16
        rooftop.moe_experts(x4, index4, weights4, gu4, dn4, gate_up_scale=gu4_scale,
                            down_scale=dn4_scale.repeat_interleave(2, -1))
    with pytest.raises(ValueError, match="gate_up_scale must be"):  # a row scale: not int4's
        rooftop.moe_experts(x4, index4, weights4, gu4, dn4, gate_up_scale=gu4_scale[..., 0], down_scale=dn4_scale)
    with pytest.raises(ValueError, match="down_scale is required with int4"):
        rooftop.moe_experts(x4, index4, weights4, gu4, dn4, gate_up_scale=gu4_scale)
    with pytest.raises(ValueError, match="down must be"):  # unpacked: [E, H, I] where int4 words are [E, H, I / 8]
        rooftop.moe_experts(x4, index4, weights4, gu4, _int4_codes(dn4), gate_up_scale=gu4_scale,
                            down_scale=dn4_scale)
    int8 = moe.quantize_experts(gate_up, down, "int8")
    with pytest.raises(TypeError, match="down"):  # fp8 gate_up, int8 down
        rooftop.moe_experts(x, index, weights, moe.quantize_experts(gate_up, down)[0], int8[2], gate_up_scale=int8[1],
                            down_scale=int8[3])
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down)
    with pytest.raises(ValueError, match="gate_up_scale is required"):
        rooftop.moe_experts(x, index, weights, gu, dn, down_scale=dn_scale)
    with pytest.raises(ValueError, match="down_scale"):
        rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale[:, :32])
    with pytest.raises(TypeError, match="down_scale"):
        rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale.double())
    with pytest.raises(ValueError, match="gate_up"):
        moe.quantize_experts(gate_up[0], down)
    with pytest.raises(ValueError, match="gate_up_scale"):
        rooftop.moe_experts(x, index, weights, gate_up, down, gate_up_scale=gu_scale, down_scale=dn_scale)
    with pytest.raises(TypeError, match="down"):
        rooftop.moe_experts(x, index, weights, gu, down, gate_up_scale=gu_scale, down_scale=dn_scale)


def test_quantized_sentinels_strides_replays_and_fp16(path):
    """int8 experts: a sentinel and -1 among int32 indices, fp16 x with gelu_tanh; calls replaying the first one's
    recorded launches on fresh codes and scales; a scale as a strided view (copied: that call is not recorded);
    experts of no intermediate width."""
    _support.clear_plans()
    for _ in range(3):
        x, index, weights, gate_up, down = _inputs(3, 5, 2, 64, 40, dtype=torch.float16, index_dtype=torch.int32)
        index[0, 1], index[2, 0] = 5, -1
        gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, "int8")
        out = rooftop.moe_experts(x, index, weights, gu, dn, "gelu_tanh", gate_up_scale=gu_scale, down_scale=dn_scale)
        ref = moe_experts_reference(x, index, weights, gu, dn, "gelu_tanh", gu_scale, dn_scale)
        assert rel_err(out, ref) < TOL[torch.float16]
    assert len(rooftop.moe_experts.plans) == 1  # as test_repeated_calls_replay...
    wide = torch.rand(5, 2 * 80, device=DEVICE)[:, ::2].copy_(gu_scale)
    assert wide.stride() == (160, 2)
    out = rooftop.moe_experts(x, index, weights, gu, dn, "gelu_tanh", gate_up_scale=wide, down_scale=dn_scale)
    assert rel_err(out, ref) < TOL[torch.float16]
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 64, 0)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, "int8")
    assert torch.equal(rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale),
                       torch.zeros_like(x))


def test_registry_entry():
    """Its cost: each routed expert (3 H I elements) once, x and the output once; the eager form (transformers'
    loop) and the reference agree with rooftop on the check sizes."""
    spec = registry.get("moe_experts")
    T, E, k, H, I = 1, 8, 2, 4096, 14336
    cost = spec.cost((T, E, k, H, I), torch.bfloat16)
    assert cost.flops == 6 * T * k * H * I and cost.bytes == (3 * T * k * H * I + 2 * T * H) * 2 + 12 * T * k
    for shape in spec.check_cases:
        inputs = spec.make_inputs(shape, torch.bfloat16, DEVICE)
        ref = spec.reference(*inputs)
        assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs), ref) < TOL[torch.bfloat16]


def test_prefill_registry_entry():
    """moe_experts_prefill: its cases and check case take the sorted path; the check case agrees with the reference
    and the eager loop."""
    spec = registry.get("moe_experts_prefill")
    assert spec.family == "moe_prefill" and "grouped_mm" in spec.peers
    for T, E, k, H, I in (*spec.cases, *spec.check_cases):
        assert moe._path(T, T * k, E, H, I, False) == "sorted"
    inputs = spec.make_inputs(spec.check_cases[0], torch.bfloat16, DEVICE)
    ref = spec.reference(*inputs)
    assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
    assert rel_err(spec.eager(*inputs), ref) < TOL[torch.bfloat16]


@pytest.mark.parametrize("quant", list(QUANTIZED))
def test_quantized_registry_entry(quant):
    """The quantized experts' cost: one byte a weight and the row scales (int4: half a byte and an fp32 scale a group
    of 128); rooftop and the eager form (each expert hit dequantized, then transformers' loop) agree with the
    reference on the check sizes."""
    spec = registry.get(f"moe_experts_{quant}")
    T, E, k, H, I = 16, 8, 2, 4096, 14336
    cost = spec.cost((T, E, k, H, I), torch.bfloat16)
    expert = 3 * H * I // 2 + 3 * H * I // 32 if quant == "int4" else 3 * H * I + 4 * (2 * I + H)
    assert cost.bytes == E * expert + 2 * T * H * 2 + 12 * T * k  # 32 pairs on 8 experts
    for shape in spec.check_cases:
        inputs = spec.make_inputs(shape, torch.bfloat16, DEVICE)
        ref = spec.reference(*inputs)
        assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs), ref) < TOL[torch.bfloat16]


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    inputs = _inputs(2, 4, 2, 64, 48)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    out = torch.compile(lambda *a: rooftop.moe_experts(*a) * 2.0, backend=counter, fullgraph=True)(*inputs)
    assert counter.frame_count == 1
    assert rel_err(out, moe_experts_reference(*inputs) * 2.0) < TOL[torch.bfloat16]


def _experts_take_codes(model, quant) -> None:
    """Each MoEExperts' weights set to its quantized codes' values (quantize_experts, the same rounding as
    quantize_model's): the model that one quantized by quantize_model must compute, to fp32's rounding. (A bf16 or
    quantized model's logits are no such yardstick: a router flip moves a random model's logits by tens of %.)"""
    from rooftop.integrations.hf import MoEExperts
    for experts in [m for m in model.modules() if isinstance(m, MoEExperts)]:
        codes = moe.quantize_experts(experts.gate_up_proj, experts.down_proj, quant, 32)
        experts.gate_up_proj.data = moe.dequantize_experts(*codes[:2], experts.gate_up_proj.dtype)
        experts.down_proj.data = moe.dequantize_experts(*codes[2:], experts.down_proj.dtype)


def _tiny_mixtral():
    """A transformers Mixtral of 2 layers, 4 experts of which 2 a token, hidden 64, random weights."""
    transformers = pytest.importorskip("transformers")
    config = transformers.MixtralConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                        num_local_experts=4, num_experts_per_tok=2)
    config._attn_implementation = "eager"
    return transformers.MixtralForCausalLM(config).to(DEVICE).eval()


def test_patched_mixtral_runs_the_kernels(monkeypatch):
    """patch_model on a transformers Mixtral: its experts become MoEExperts, which take rooftop.moe_experts for a
    decode-sized call, a prefill the grouped path takes (past MOE_MAX_TOKENS, top-k x tokens <= PAIRS_MAX) and one
    past that (the sorted path): the kernels launched, the logits as the stock model's; the experts' parameters keep
    their names."""
    from rooftop.integrations.hf import MoEExperts, patch_model
    model = _tiny_mixtral()
    experts = {name for name, _ in model.named_parameters() if ".experts." in name}
    k = model.config.num_experts_per_tok
    short, middle, long = (torch.randint(0, 128, (1, n), device=DEVICE)
                           for n in (4, moe.MOE_MAX_TOKENS + 1, moe.PAIRS_MAX // k + 1))
    with torch.no_grad():
        before = [model(ids).logits for ids in (short, middle, long)]
        assert patch_model(model)["moe_experts"] == 2
        assert isinstance(model.model.layers[0].mlp.experts, MoEExperts)
        assert {name for name, _ in model.named_parameters() if ".experts." in name} == experts
        monkeypatch.setattr(_support, "PLANS_ENABLED", False)  # every call through the op (no replay)
        launched = []
        real = moe._moe_experts_op
        monkeypatch.setattr(moe, "_moe_experts_op", lambda *a: launched.append(a[0].shape[0]) or real(*a))
        for ids, ref in zip((short, middle, long), before):
            assert rel_err(model(ids).logits, ref) < (1e-2 if HAS_CUDA else 1e-4)
    assert launched == [n for ids in (short, middle, long) for n in [ids.shape[1]] * 2]  # two layers, every call


def test_patched_gpt_oss():
    """patch_model on a transformers gpt-oss (transposed experts, gate and up interleaved, biases, a clamped gate): its
    experts re-laid into a MoEExperts of their own (parameters of the same names, no copy of the original kept); the
    logits as stock's for a decode-sized call and past the pairs the grouped path takes (the sorted path);
    quantize_model(bits=8) on the experts alone then makes them int8 experts with the biases kept, computing what the
    model with the codes' values does."""
    transformers = pytest.importorskip("transformers")
    from rooftop.integrations.hf import MoEExperts, QuantMoEExperts, patch_model
    config = transformers.GptOssConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                       max_position_embeddings=64, num_local_experts=4, num_experts_per_tok=2)
    config._attn_implementation = "eager"
    model = transformers.GptOssForCausalLM(config).to(DEVICE).eval()
    short, long = (torch.randint(0, 128, (1, n), device=DEVICE) for n in (4, moe.PAIRS_MAX // 2 + 1))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "experts" in name and "bias" in name:
                p.normal_()  # transformers starts them at zero
        before = [model(ids).logits for ids in (short, long)]
        assert patch_model(model)["moe_experts"] == 2
        experts = model.model.layers[0].mlp.experts
        assert isinstance(experts, MoEExperts) and experts.own_forward is None
        assert experts.gate_up_proj.shape == (4, 2 * 96, 64) and experts.activation == "swiglu_oai"
        for ids, ref in zip((short, long), before):
            assert rel_err(model(ids).logits, ref) < (1e-2 if HAS_CUDA else 1e-4)
        with_codes = copy.deepcopy(model)
        _experts_take_codes(with_codes, "int8")
        rooftop.quantize_model(model, bits=8, group_size=32, skip=("*_proj", "lm_head"))  # the experts only
        experts = model.model.layers[0].mlp.experts
        assert isinstance(experts, QuantMoEExperts) and experts.gate_up_proj_bias is not None
        for ids in (short, long):
            assert rel_err(model(ids).logits, with_codes(ids).logits) < (1e-2 if HAS_CUDA else 1e-4)


@pytest.mark.parametrize("bits", ["fp8", 8, 4])
def test_quantize_model_experts(bits):
    """quantize_model(bits="fp8" / 8 / 4) on a patched Mixtral: each MoEExperts becomes QuantMoEExperts (fp8 / int8
    code buffers under the same names with row scales, int4 words with group scales; kept through .to(dtype)); a
    decode-sized call (the kernels) and the sorted path (past the pairs the grouped path takes) agree on the same
    tokens and within the format's step of the unquantized experts; the model computes what it does with the experts'
    codes' values (the experts alone quantized); 4 bits skip experts whose sizes are not whole groups."""
    from rooftop.integrations.hf import MoEExperts, QuantMoEExperts, patch_model
    quant = {"fp8": "fp8", 8: "int8", 4: "int4"}[bits]
    model = _tiny_mixtral()
    ids = torch.randint(0, 128, (1, 6), device=DEVICE)
    with torch.no_grad():
        patch_model(model)
        ragged = rooftop.quantize_model(copy.deepcopy(model), bits=4, group_size=64)  # I = 96: not whole groups
        assert ragged["skipped"]["model.layers.0.mlp.experts"].endswith("not a multiple of group_size=64")
        with_codes = copy.deepcopy(model)
        _experts_take_codes(with_codes, quant)
        unquantized = model.model.layers[0].mlp.experts
        report = rooftop.quantize_model(model, bits=bits, group_size=32, skip=("*_proj", "lm_head"))
        experts = model.model.layers[0].mlp.experts
        assert isinstance(experts, QuantMoEExperts) and "model.layers.1.mlp.experts" in report["quantized"]
        assert experts.gate_up_proj.dtype == QUANTIZED[quant][0]
        assert experts.down_scale.shape == ((4, 64, 3) if bits == 4 else (4, 64))
        assert ("codes=int4" in repr(experts)) == (bits == 4)
        assert not any(isinstance(m, MoEExperts) for m in model.modules())
        x = torch.randn(3, 64, device=DEVICE)
        index, weights = torch.randint(0, 4, (3, 2), device=DEVICE), torch.rand(3, 2, device=DEVICE).softmax(-1)
        copies = moe.PAIRS_MAX // 2 // 3 + 1  # past the grouped path's pairs: the sorted path
        many = torch.cat([x] * copies), torch.cat([index] * copies), torch.cat([weights] * copies)
        assert rel_err(experts(*many)[:3], experts(x, index, weights)) < 1e-5
        out_tol = QUANTIZED[quant][2]
        assert rel_err(experts(x, index, weights), unquantized(x, index, weights)) < out_tol
        assert rel_err(model(ids).logits, with_codes(ids).logits) < (1e-2 if HAS_CUDA else 1e-4)
        model.to(torch.float64)  # codes and scales keep their dtypes
        assert experts.gate_up_proj.dtype == QUANTIZED[quant][0]
        assert experts.gate_up_scale.dtype == experts.down_scale.dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 8, 2, 4096, 14336), (8, 128, 8, 2048, 768), (16, 8, 2, 4096, 1000)])
def test_gpu_model_sizes(shape, path):
    """Mixtral's and Qwen3-30B-A3B's expert shapes at decode batch sizes (experts shared between tokens), and a
    ragged I."""
    inputs = _inputs(*shape)
    assert rel_err(rooftop.moe_experts(*inputs), moe_experts_reference(*inputs)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 8, 2, 4096, 14336), (8, 128, 8, 2048, 768)])
@pytest.mark.parametrize("quant", list(QUANTIZED))
def test_gpu_quantized_model_sizes(shape, quant, path):
    """fp8 / int8 experts at Mixtral's and Qwen3-30B-A3B's shapes (one token: the down projection split)."""
    x, index, weights, gate_up, down = _inputs(*shape)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, quant)
    out = rooftop.moe_experts(x, index, weights, gu, dn, gate_up_scale=gu_scale, down_scale=dn_scale)
    assert rel_err(out, moe_experts_reference(x, index, weights, gu, dn, "silu", gu_scale, dn_scale)) < TOL[
        torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("tokens", [1, 8])
def test_gpu_gpt_oss_sizes(tokens, path):
    """gpt-oss-20b's experts (32 of 2880 x 2880, top 4) with biases and the clamped gate."""
    x, index, weights, gate_up, down = _inputs(tokens, 32, 4, 2880, 2880)
    biases = dict(gate_up_bias=torch.randn(32, 2 * 2880, device=DEVICE, dtype=torch.bfloat16),
                  down_bias=torch.randn(32, 2880, device=DEVICE, dtype=torch.bfloat16))
    out = rooftop.moe_experts(x * 10, index, weights, gate_up, down, "swiglu_oai", **biases)
    ref = moe_experts_reference(x * 10, index, weights, gate_up, down, "swiglu_oai", **biases)
    assert rel_err(out, ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_sweep_keeps_a_provider_that_cannot_be_graphed(monkeypatch):
    """The eager loop synchronises the host (nonzero), so no CUDA graph holds it: the sweep keeps its do_bench row
    without a graph time, and rooftop's row gets one. (Every provider is offered a graph: the loop can take longer
    than GRAPH_BELOW_MS, and then none is tried, as on an H200 in session 61.)"""
    from rooftop.bench import sweep
    from rooftop.hardware import ceilings_for
    monkeypatch.setattr(sweep, "GRAPH_BELOW_MS", float("inf"))
    said = []
    rows = sweep.measure(registry.get("moe_experts"), (1, 4, 2, 64, 48), torch.bfloat16, ["rooftop", "eager"],
                         ceilings_for(), say=said.append)
    by_provider = {r["provider"]: r for r in rows}
    assert set(by_provider) == {"rooftop", "eager"}
    assert "graph_ms" in by_provider["rooftop"] and "graph_ms" not in by_provider["eager"]
    assert any("not capturable" in line for line in said)


def test_down_projection_split_over_programs(monkeypatch):
    """A decode step's few tokens: I cut into ranges over programs (here 5, forced by asking for many programs an
    SM), whose fp32 partials the tile's last range sums in order; right twice in a row (the arrival counters left at
    zero), and with one range."""
    grids = []
    real_launch = moe.launch
    monkeypatch.setattr(moe, "launch", lambda kernel, grid, *a, **k: grids.append(grid) or real_launch(kernel, grid,
                                                                                                      *a, **k))
    monkeypatch.setattr(moe, "_takes_grouped", lambda *a: False)
    monkeypatch.setattr(moe, "DOWN_LAUNCH", (16, 64, 4, 64))
    _support.clear_plans()
    for _ in range(2):
        inputs = _inputs(2, 4, 2, 64, 260)
        assert rel_err(rooftop.moe_experts(*inputs), moe_experts_reference(*inputs)) < TOL[torch.bfloat16]
    assert grids[1] == (2, 4, 5)
    if HAS_CUDA:
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(inputs[0].device, 8).count_nonzero()) == 0
    monkeypatch.setattr(moe, "DOWN_LAUNCH", (16, 512, 4, 1))
    _support.clear_plans()  # a plan keeps the launch its signature's first calls chose
    inputs = _inputs(2, 4, 2, 64, 260)
    assert rel_err(rooftop.moe_experts(*inputs), moe_experts_reference(*inputs)) < TOL[torch.bfloat16]
    assert grids[-1] == (2, 4, 1)


@pytest.mark.parametrize("stages", [(1, 1), (3, 2)] if HAS_CUDA else [(1, 1)])
@pytest.mark.parametrize("quant", [None, "int8", "int4"])
def test_per_pair_pipelines(monkeypatch, stages, quant):
    """The per-pair kernels' k loops plain and software-pipelined (stages: on a GPU, the interpreter ignores them):
    rows of 2 k-tiles, the last ragged (H = 288), I cut into two
    ranges of 2 k-tiles, the second's last ragged (I = 800, at most DOWN_MAX_SPLITS = 2 ranges), both kernels' last
    column tiles ragged (BLOCK_N 64), x and the 16-bit weights views of NaN-padded rows (a value read past a row's
    end, H or I, would show): as the reference on the same weights."""
    fmt = "int4" if quant == "int4" else "codes" if quant else "float"
    monkeypatch.setattr(moe, "_takes_grouped", lambda *a: False)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", None)  # bf16 x's int4 on the CUDA-core kernels too
    monkeypatch.setattr(moe, "PER_PAIR_STAGES", {**moe.PER_PAIR_STAGES, fmt: stages})
    monkeypatch.setattr(moe, "INT4_GATE_UP_LAUNCH" if quant == "int4" else "GATE_UP_LAUNCH", (64, 256, 2))
    monkeypatch.setattr(moe, "INT4_DOWN_LAUNCH" if quant == "int4" else "DOWN_LAUNCH", (64, 256, 2, 64))
    monkeypatch.setattr(moe, "DOWN_MAX_SPLITS", 2)
    grids = []
    real_launch = moe.launch
    monkeypatch.setattr(moe, "launch", lambda kernel, grid, *a, **k: grids.append(grid) or real_launch(kernel, grid,
                                                                                                      *a, **k))
    x, index, weights, gate_up, down = _inputs(2, 4, 2, 288, 800)
    x = torch.full((2, 288 + 32), float("nan"), device=DEVICE, dtype=x.dtype)[:, :288].copy_(x)
    if quant:
        gate_up, gu_scale, down, dn_scale = moe.quantize_experts(gate_up, down, quant, 32)
        quantized = dict(gate_up_scale=gu_scale, down_scale=dn_scale)
    else:
        quantized = {}
        gate_up = torch.full((4, 2 * 800, 288 + 32), float("nan"), device=DEVICE, dtype=x.dtype)[..., :288].copy_(
            gate_up)
        down = torch.full((4, 288, 800 + 32), float("nan"), device=DEVICE, dtype=x.dtype)[..., :800].copy_(down)
    _support.clear_plans()
    try:
        out = rooftop.moe_experts(x, index, weights, gate_up, down, **quantized)
        ref = moe_experts_reference(x, index, weights, gate_up, down, "silu", *quantized.values())
        assert rel_err(out, ref) < TOL[torch.bfloat16]
        assert grids[-1] == (2, 5, 2)  # H / 64 column tiles, 2 ranges of I
    finally:
        _support.clear_plans()


@pytest.mark.gpu
@pytest.mark.parametrize("hint", [True, False])
@pytest.mark.parametrize("launch, pair_warps, ranges", [((4, 4, 64, 64, 4), 4, 2), ((1, 2, 8, 64, 8), 8, 1),
                                                       ((1, 1, 32, 1, 1), 1, 2)])
@pytest.mark.parametrize("group", [32, 128])
@pytest.mark.parametrize("early, ahead", [(True, (1, None, 0)), (False, (1, None, 0)), (True, (2, 80, 0))])
def test_gpu_int4_pair_mma(monkeypatch, hint, launch, pair_warps, ranges, group, early, ahead):
    """The per-pair path's int4 kernels for bf16 x (mma.sync from registers, INT4_PAIR_MMA_LAUNCH), their word loads
    with the L2 prefetch-size hint or not: H = 544 (k-steps of 128, the last a quarter; groups of 32; I = 800) or
    640 (groups of 128; I = 896), I cut into two ranges (at 800 the second's last k-step ragged; DOWN_MAX_SPLITS)
    or, where the budget holds only the tiles' warps, one, gate / up's row tiles on four warps each where its aim
    allows (K_WARPS: the first warp two k-steps, at 544 its second a quarter, the others one) or one, down's the
    token's eight pairs dealt to four warps a tile (two rounds), to eight or one (PAIR_WARPS), at 4 warps (64 rows)
    both kernels' last column tiles ragged where H = 544, a sentinel and -1 among the indices; gpt-oss's gate with
    biases (with the hint) or silu without; x a 16-byte aligned row view of NaN-padded rows (read in place: values
    past a row's end would show), then a view off that alignment (copied): as the reference on the same codes and
    scales, three times (the arrival counters; the middle call another x); the down kernel's first weights before
    its PDL wait (INT4_DOWN_EARLY) or after, one k-step of them ahead or two (INT4_DOWN_AHEAD, capped registers)."""
    monkeypatch.setattr(moe, "_takes_grouped", lambda *a: False)
    monkeypatch.setattr(moe, "INT4_DOWN_EARLY", early)
    monkeypatch.setattr(moe, "INT4_DOWN_AHEAD", ahead)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", launch)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_MIN_WARPS", 0)  # these few pairs would take the CUDA-core kernels
    monkeypatch.setattr(moe, "num_sms", lambda index: 132)  # the launches below an H100's or H200's, on any card
    monkeypatch.setattr(moe, "INT4_L2_256B", hint)
    monkeypatch.setattr(moe, "DOWN_MAX_SPLITS", 2)
    grids = []
    real_launch = moe.launch
    monkeypatch.setattr(moe, "launch", lambda kernel, grid, *a, **k: grids.append(
        (kernel, grid, k.get("L2_256B"), k.get("K_WARPS", k.get("PAIR_WARPS")), (k.get("EARLY"), k.get("AHEAD"),
                                                                                k.get("maxnreg"))))
        or real_launch(kernel, grid, *a, **k))
    H, I = (544, 800) if group == 32 else (640, 896)
    x, index, weights, gate_up, down = _inputs(3, 4, 8, H, I)
    index[0, 1], index[2, 0] = 4, -1
    padded = torch.full((3, H + 40), float("nan"), device=DEVICE, dtype=x.dtype)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, "int4", group)
    activation, biases = ("swiglu_oai", dict(gate_up_bias=torch.randn(4, 2 * I, device=DEVICE, dtype=x.dtype),
                                              down_bias=torch.randn(4, H, device=DEVICE, dtype=x.dtype))) if hint \
        else ("silu", {})
    other = torch.randn_like(x)  # the middle call's: an h read before the gate / up kernel's end would show
    refs = [moe_experts_reference(xs, index, weights, gu, dn, activation, gu_scale, dn_scale, **biases)
            for xs in (x, other)]
    _support.clear_plans()
    try:
        for view, xs, ref in zip((padded[:, 8:H + 8], padded[:, 1:H + 1], padded[:, 8:H + 8]), (x, other, x),
                                 (refs[0], refs[1], refs[0])):
            out = rooftop.moe_experts(view.copy_(xs), index, weights, gu, dn, activation, gate_up_scale=gu_scale,
                                      down_scale=dn_scale, **biases)
            assert rel_err(out, ref) < TOL[torch.bfloat16]
    finally:
        _support.clear_plans()
    (gate_up_kernel, gate_up_grid, gate_up_hint, k_warps, _), \
        (down_kernel, down_grid, down_hint, down_pair_warps, down_options) = grids[-2:]
    assert gate_up_kernel is moe._moe_gate_up_mma_kernel and down_kernel is moe._moe_down_mma_kernel
    assert gate_up_hint == down_hint == hint
    assert k_warps == (4 if launch[3] > 1 else 1)
    assert down_pair_warps == pair_warps and down_options == (early, *ahead[:2])
    assert gate_up_grid == (24, -(-I // (16 * launch[0])))
    assert down_grid == (3, -(-H // (16 * launch[1])), ranges)
    torch.cuda.synchronize()
    assert int(_support.arrival_counters(x.device, 3 * down_grid[1]).count_nonzero()) == 0


def test_int4_word_views(path, monkeypatch):
    """int4 experts whose word rows are views off 16-byte alignment: rows 34 words apart (not a multiple of 4), experts
    8194 words apart, a start one word into the storage: no 16-byte load of them (on a GPU their mma loops' words by
    tl.load, not the hinted inline PTX: `_hinted`), each as the reference on the same codes and scales."""
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_MIN_WARPS", 0)
    x, index, weights, gate_up, down = _inputs(3, 4, 2, 256, 128)
    gu, gu_scale, dn, dn_scale = moe.quantize_experts(gate_up, down, "int4", 64)
    views = ((torch.zeros(4, 256, 34, device=DEVICE, dtype=gu.dtype)[..., :32].copy_(gu), dn),  # gate_up's rows
             (torch.zeros(4, 256 * 32 + 2, device=DEVICE, dtype=gu.dtype)[:, :256 * 32].view(4, 256, 32).copy_(gu),
              dn),  # its experts
             (gu, torch.zeros(dn.numel() + 1, device=DEVICE, dtype=dn.dtype)[1:].view_as(dn).copy_(dn)))  # down's start
    ref = moe_experts_reference(x, index, weights, gu, dn, "silu", gu_scale, dn_scale)
    assert moe._hinted(gu, dn) == moe.INT4_L2_256B
    for gate_up_view, down_view in views:
        assert not moe._hinted(gate_up_view, down_view)
        out = rooftop.moe_experts(x, index, weights, gate_up_view, down_view, gate_up_scale=gu_scale,
                                  down_scale=dn_scale)
        assert rel_err(out, ref) < TOL[torch.bfloat16]


def test_pair_mma_split(monkeypatch):
    """_pair_mma_split at 132 SMs and the aim of 16 warps an SM: one token of Mixtral-8x7B's experts (1792 one-warp
    tiles: 13.6 an SM) keeps a warp a tile, gpt-oss-20b's (720) takes 2, Qwen3-30B-A3B's (384) 4, and a row of two
    k-steps at most 2 (a k-step a warp at least); 2-warp tiles count their warps; an aim of 64 stops at 4 (the most)."""
    monkeypatch.setattr(moe, "num_sms", lambda index: 132)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", (1, 1, 24, 16, 8))
    cpu = torch.device("cpu")
    for (pairs, H, I), (k_warps, per_sm) in (((2, 4096, 14336), (1, 1792 / 132)), ((4, 2880, 2880), (2, 1440 / 132)),
                                             ((8, 2048, 768), (4, 1536 / 132)), ((8, 256, 768), (2, 768 / 132))):
        assert moe._pair_mma_split(pairs, H, I, cpu) == (k_warps, pytest.approx(per_sm))
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", (2, 1, 24, 16, 8))
    assert moe._pair_mma_split(4, 2880, 2880, cpu) == (2, pytest.approx(1440 / 132))  # 360 2-warp tiles
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", (1, 1, 24, 64, 8))
    assert moe._pair_mma_split(8, 2048, 768, cpu) == (4, pytest.approx(1536 / 132))


# The per-pair mma down kernel (Qwen3's launch: 8 pair warps, 3 ranges) compiled for sm_90 with EARLY off, on, and on
# with two k-steps ahead (AHEAD), in a process of its own (no GPU needed; not under the interpreter): prints the global
# loads its PTX issues before the PDL wait (griddepcontrol.wait).
_EARLY_SCRIPT = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from rooftop.ops import moe

kernel = moe._moe_down_mma_kernel
pointers = dict(idx_ptr="*i64", rw_ptr="*fp32", w_ptr="*i32", scale_ptr="*fp32", ws_ptr="*fp32", cnt_ptr="*i32")
for early, ahead in ((False, 1), (True, 1), (True, 2)):
    consts = dict(GROUP_SIZE=128, HAS_BIAS=False, SPLITS=3, SUM_BATCH=3, BLOCK_N=16, PAIR_WARPS=8, L2_256B=True,
                  EARLY=early, AHEAD=ahead, PDL=True)
    sig = {a: "constexpr" if a in consts else pointers.get(a, "*bf16" if a.endswith("_ptr") else "i32")
           for a in kernel.arg_names}
    ptx = triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=consts), target=GPUTarget("cuda", 90, 32),
                         options=dict(num_warps=8)).asm["ptx"]
    head = ptx[:ptx.index("griddepcontrol.wait")]
    print(",".join(line.split()[0] for line in head.splitlines() if "ld.global" in line) or "-")
"""


def test_down_early_loads_only_weights_before_the_wait():
    """INT4_DOWN_EARLY's order: off, the down kernel reads nothing before its PDL wait; on, only its first pair's
    expert index (by .cg: L2, no stale L1 line) and that expert's first k-step (two rows' words with the L2::256B
    hint, their two group scales), or first two with INT4_DOWN_AHEAD's 2; the router weights and h after the wait."""
    done = subprocess.run([sys.executable, "-c", _EARLY_SCRIPT], env=compiler_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    off, on, two = done.stdout.split()
    assert off == "-"
    for loads, steps in ((on, 1), (two, 2)):
        assert sorted(loads.split(",")) == sorted(["ld.global.cg.b64"] + ["ld.global.nc.L2::256B.v4.b32"] * 2 * steps
                                                  + ["ld.global.b32"] * 2 * steps)


def test_pair_mma_down(monkeypatch):
    """_pair_mma_down at 132 SMs and a budget of 24 warps an SM (3168) for both pair warps and ranges: one token of
    Qwen3-30B-A3B's (128 one-warp tiles) deals its 8 pairs to 8 warps and cuts I (6 k-steps) into 3 ranges; four tokens
    (512 tiles) 4 warps and one range (a chain of 2 x 7, tied with 2 warps and 3 ranges' 4 x 3 + 2: to more pair warps);
    Mixtral-8x7B's (256 tiles, k 2) 2 warps, 6 ranges of 19 k-steps; gpt-oss-20b's (180, k 4) 4 warps, 4 ranges of 6;
    k = 6 takes 2 (dividing k), k = 3 one; 2-warp tiles count their warps. The shortest chain a warp: four tokens of
    Mixtral's one pair warp and 3 ranges of 38 k-steps (2 x 39 + the close's 2 against 2 warps' one range of 112: 113),
    eight of Qwen3's one and 3 ranges of 2 (8 x 3 + 2 against 2 warps' 4 x 7). Pair warps within 32 an SM (4224), ranges
    within 24: four, eight and sixteen tokens of Qwen3's 8, 4 and 2 pair warps (chains 7, 14, 28), one range; one token
    of each model as before (the pair budget buys no ranges); a pair budget under the ranges' counts as theirs."""
    monkeypatch.setattr(moe, "num_sms", lambda index: 132)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", (1, 1, 24, 16, 8))
    monkeypatch.setattr(moe, "INT4_DOWN_PAIR_BUDGET", 24)
    cpu = torch.device("cpu")
    for (T, top_k, H, I), expected in (((1, 8, 2048, 768), (8, 3, 256)), ((4, 8, 2048, 768), (4, 1, 768)),
                                       ((1, 2, 4096, 14336), (2, 6, 2432)), ((1, 4, 2880, 2880), (4, 4, 768)),
                                       ((1, 6, 2048, 768), (2, 6, 128)), ((1, 3, 2048, 768), (1, 6, 128)),
                                       ((4, 2, 4096, 14336), (1, 3, 4864)), ((8, 8, 2048, 768), (1, 3, 256))):
        assert moe._pair_mma_down(T, top_k, H, I, cpu) == expected
    monkeypatch.setattr(moe, "INT4_DOWN_PAIR_BUDGET", 32)
    for (T, top_k, H, I), expected in (((4, 8, 2048, 768), (8, 1, 768)), ((8, 8, 2048, 768), (4, 1, 768)),
                                       ((16, 8, 2048, 768), (2, 1, 768)), ((1, 8, 2048, 768), (8, 3, 256)),
                                       ((1, 2, 4096, 14336), (2, 6, 2432)), ((1, 4, 2880, 2880), (4, 4, 768))):
        assert moe._pair_mma_down(T, top_k, H, I, cpu) == expected
    monkeypatch.setattr(moe, "INT4_DOWN_PAIR_BUDGET", 8)
    assert moe._pair_mma_down(4, 8, 2048, 768, cpu) == (4, 1, 768)
    monkeypatch.setattr(moe, "INT4_DOWN_PAIR_BUDGET", 24)
    monkeypatch.setattr(moe, "INT4_PAIR_MMA_LAUNCH", (1, 2, 24, 16, 8))
    assert moe._pair_mma_down(4, 8, 2048, 768, cpu) == (4, 1, 768)  # 256 2-warp tiles


def test_down_ahead(monkeypatch):
    """_down_ahead with the shipped INT4_DOWN_AHEAD at 132 SMs: the launches' ranges of 38 and 56 k-steps (two and
    four tokens of Mixtral-8x7B's, three) take two k-steps ahead with the register cap; one token's 19, Qwen3-30B-A3B's
    2-6 and gpt-oss-20b's 6 one, uncapped."""
    monkeypatch.setattr(moe, "num_sms", lambda index: 132)
    cpu = torch.device("cpu")
    ahead, maxnreg, fewest = moe.INT4_DOWN_AHEAD
    assert ahead == 2 and maxnreg and 19 < fewest <= 38
    for (T, top_k, H, I), expected in (((2, 2, 4096, 14336), (2, maxnreg)), ((3, 2, 4096, 14336), (2, maxnreg)),
                                       ((4, 2, 4096, 14336), (2, maxnreg)), ((1, 2, 4096, 14336), (1, None)),
                                       ((1, 8, 2048, 768), (1, None)), ((2, 8, 2048, 768), (1, None)),
                                       ((1, 4, 2880, 2880), (1, None))):
        assert moe._down_ahead(moe._pair_mma_down(T, top_k, H, I, cpu)[2]) == expected


def test_grouped_path_groups_and_ranges(monkeypatch):
    """The grouped path: more than GROUP pairs on one expert (several passes of a group), a token's two pairs on the
    same expert, a sentinel; the down projection's I cut into 5 ranges (forced by asking for many programs an SM)
    whose partials each token tile's last arrival sums; right twice in a row (the arrival counters left at zero)."""
    grids = []
    real_launch = moe.launch
    monkeypatch.setattr(moe, "launch", lambda kernel, grid, *a, **k: grids.append(grid) or real_launch(kernel, grid,
                                                                                                      *a, **k))
    monkeypatch.setattr(moe, "GROUPED_LAUNCH", (16, 64, 4))
    monkeypatch.setattr(moe, "GROUPED_DOWN_PER_SM", 64)
    _support.clear_plans()
    for _ in range(2):
        x, index, weights, gate_up, down = _inputs(20, 3, 2, 48, 260)
        index[:, 0] = 1  # 20 pairs on expert 1
        index[0, 1], index[3, 1] = 1, 3  # a token's both pairs there; the sentinel
        assert int((index == 1).sum()) > moe.GROUP
        out = rooftop.moe_experts(x, index, weights, gate_up, down)
        assert rel_err(out, moe_experts_reference(x, index, weights, gate_up, down)) < TOL[torch.bfloat16]
    assert grids[-1] == (40, 3, 5)
    if HAS_CUDA:
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(x.device, 60).count_nonzero()) == 0
    _support.clear_plans()


def test_grouped_path_where_experts_are_shared_or_large():
    """The dispatch: Mixtral-8x7B's experts (H I = 58.7M) grouped from one token, quantized ones once a step's pairs
    cover the 8 experts; Qwen3-30B-A3B's (1.6M) once they cover its 128 (16 tokens of top 8); never past PAIRS_MAX
    pairs."""
    mixtral, qwen3 = (8, 4096, 14336), (128, 2048, 768)
    assert moe._takes_grouped(2, *mixtral, False) and moe._takes_grouped(32, *mixtral, False)
    assert not moe._takes_grouped(4, *mixtral, True) and moe._takes_grouped(8, *mixtral, True)
    assert not moe._takes_grouped(64, *qwen3, False) and moe._takes_grouped(128, *qwen3, False)
    assert not moe._takes_grouped(moe.PAIRS_MAX + 1, *mixtral, False)


def test_dispatch_takes_the_sorted_path_past_the_others():
    """Past MOE_MAX_TOKENS tokens a call the grouped path does not take goes to the sorted path; up to them, a pair a
    program (int4 experts: grouped only up to them). The sorted path's blocks by the experts' mean run and x's
    dtype."""
    mixtral, qwen3, small = (8, 4096, 14336), (128, 2048, 768), (64, 1024, 512)
    assert moe._path(200, 400, *mixtral, False) == "sorted" and moe._path(64, 128, *mixtral, False) == "grouped"
    assert moe._path(65, 130, *mixtral, False) == "sorted"  # runs past a GROUP: the grouped path's passes in turn
    assert moe._path(8, 64, *qwen3, False) == "per-pair" and moe._path(17, 136, *qwen3, True) == "grouped"
    assert moe._path(17, 34, *small, False) == "sorted" and moe._path(16, 32, *small, False) == "per-pair"
    # int4: grouped from two pairs an expert with bf16 x on sm_80+ (paired), three otherwise, else a pair a program or
    # sorted
    assert moe._path(7, 14, *mixtral, True, True, True) == "per-pair"
    assert moe._path(8, 16, *mixtral, True, True, True) == "grouped"
    assert moe._path(8, 16, *mixtral, True, True) == "per-pair"
    assert moe._path(12, 24, *mixtral, True, True) == "grouped"
    assert moe._path(16, 128, *qwen3, True, True) == "per-pair" and moe._path(17, 136, *qwen3, True, True) == "sorted"
    assert moe._path(32, 64, *mixtral, True, True) == "sorted"  # int4 grouped only up to MOE_MAX_TOKENS
    assert moe._sorted_launch(4096 * 2, 8, torch.bfloat16)[0] == 128  # runs of 1024 pairs: the widest blocks
    assert moe._sorted_launch(4096 * 2, 8, torch.float32)[0] == 64  # which spill with fp32 tiles
    assert moe._sorted_launch(17 * 8, 8, torch.bfloat16)[0] == 32  # runs of 17: the next power of two


@pytest.mark.parametrize("chunk", [4096, 4])
def test_sorted_layout(monkeypatch, chunk):
    """_sorted_slots: each pair in exactly one slot, in pair order within its expert's run; each block holds one
    expert's pairs (E: those routed outside [0, E)), as many blocks an expert as its pairs fill; the blocks past the
    last marked E + 1; padding -1. Chunks of 4 pairs: several programs, each placed past the pairs before its own."""
    monkeypatch.setattr(moe, "SLOTS_CHUNK", chunk)
    E, block_m = 5, 4
    index = torch.tensor([[3, 0], [3, 3], [E, 3], [-1, 0], [3, 3], [3, 3], [3, 1]], device=DEVICE)  # 2 and 4 unused
    slot_pair, block_expert = moe._sorted_slots(index, E, block_m)
    for got, want in zip((slot_pair, block_expert), moe._sorted_slots_reference(index, E, block_m)):
        assert torch.equal(got, want)
    flat, pairs = index.reshape(-1).cpu(), index.numel()
    assert block_expert.numel() == -(-pairs // block_m) + E + 1 and slot_pair.numel() == block_expert.numel() * block_m
    slots, experts = slot_pair.cpu().view(-1, block_m), block_expert.cpu().tolist()
    assert sorted(slots[slots >= 0].tolist()) == list(range(pairs))
    assert experts == sorted(experts)
    for b, e in enumerate(experts):
        members = slots[b][slots[b] >= 0]
        assert torch.equal(members, members.sort().values) and (slots[b] >= 0).tolist() == sorted(
            (slots[b] >= 0).tolist(), reverse=True)  # padding at a block's end
        if e < E:
            assert members.numel() and bool((flat[members] == e).all())
        elif e == E:
            assert bool(((flat[members] < 0) | (flat[members] >= E)).all())
        else:
            assert not members.numel()
    assert [experts.count(e) for e in range(E + 1)] == [1, 1, 0, 3, 0, 1]  # expert 3: 9 pairs in 3 blocks of 4


@pytest.mark.parametrize("E, k, T, block_m, chunk, scan", [(8, 2, 300, 128, 4096, 256), (128, 8, 40, 16, 64, 256),
                                                         (3, 1, 50, 32, 16, 256), (1, 1, 30, 16, 8, 256),
                                                         (12, 2, 70, 16, 8, 4), (128, 8, 20, 16, 256, 256)])
def test_sorted_layout_random(monkeypatch, E, k, T, block_m, chunk, scan):
    """_sorted_slots on fresh random routing (some pairs outside [0, E), int32 and int64 indices) against the torch
    reference: one program and several (chunks of 8-64 pairs), 128 experts (256 bins), one expert (2 bins), runs
    short of a block, the chunks' counts scanned in several steps (18 chunks, 4 a step, over 2 programs of 8 bins),
    block experts over several passes (139 blocks, one program)."""
    monkeypatch.setattr(moe, "SLOTS_CHUNK", chunk)
    monkeypatch.setattr(moe, "SLOTS_SCAN_STEP", scan)
    index = torch.randint(-1, E + 1, (T, k), device=DEVICE)
    for idx in (index, index.int()):
        want = moe._sorted_slots_reference(idx, E, block_m)
        poisoned = [torch.full_like(t, 12345) for t in want]  # every element written: none keeps the poison
        got = moe._sorted_slots_into(idx, E, block_m, *poisoned)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_sorted_path_blocks(monkeypatch, dtype):
    """The sorted path with blocks of 16 slots (column and k-tiles narrower than H and I): an expert's pairs over
    several blocks (a partial last one), a token's two pairs on one expert, sentinels, an expert no pair takes;
    gpt-oss's gate and biases; quantized experts; right twice in a row."""
    monkeypatch.setattr(moe, "_path", lambda *a: "sorted")
    monkeypatch.setattr(moe, "SORTED_LAUNCHES", ((16, (16, 16, 2, 2), (16, 32, 2, 2)),))
    T, E, k, H, I = 40, 4, 2, 48, 40
    for _ in range(2):
        x, index, weights, gate_up, down = _inputs(T, E, k, H, I, dtype=dtype)
        index[:, 0] = 1  # 40 pairs on expert 1 and more: three blocks
        index[0, 1], index[3, 1], index[5, 1] = 1, E, -1
        index[index == 2] = 3
        ref = moe_experts_reference(x, index, weights, gate_up, down)
        assert rel_err(rooftop.moe_experts(x, index, weights, gate_up, down), ref) < TOL[dtype]
    biases = dict(gate_up_bias=torch.randn(E, 2 * I, device=DEVICE, dtype=dtype),
                  down_bias=torch.randn(E, H, device=DEVICE, dtype=dtype))
    ref = moe_experts_reference(x, index, weights, gate_up, down, "swiglu_oai", **biases)
    assert rel_err(rooftop.moe_experts(x, index, weights, gate_up, down, "swiglu_oai", **biases), ref) < TOL[dtype]
    gate_up, gate_up_scale, down, down_scale = moe.quantize_experts(gate_up, down, "int8")
    ref = moe_experts_reference(x, index, weights, gate_up, down, "silu", gate_up_scale, down_scale)
    out = rooftop.moe_experts(x, index, weights, gate_up, down, gate_up_scale=gate_up_scale, down_scale=down_scale)
    assert rel_err(out, ref) < TOL[dtype]


class Experts(torch.nn.Module):
    """transformers' experts, as its eager loop computes them; `swap` puts the up half first, `clamp` clamps the
    gate (Step-3's swiglu_limit), `bias` adds one."""

    def __init__(self, E=4, H=64, I=48, swap=False, clamp=None, bias=False):
        super().__init__()
        self.gate_up_proj = torch.nn.Parameter(torch.randn(E, 2 * I, H) * H**-0.5)
        self.down_proj = torch.nn.Parameter(torch.randn(E, H, I) * I**-0.5)
        self.gate_up_proj_bias = torch.nn.Parameter(torch.randn(E, 2 * I) * 0.01) if bias else None
        self.act_fn, self.swap, self.clamp = torch.nn.SiLU(), swap, clamp

    def gated(self, gate_up):
        gate, up = gate_up.chunk(2, dim=-1)
        if self.swap:
            gate, up = up, gate
        if self.clamp is not None:
            gate, up = gate.clamp(max=self.clamp), up.clamp(-self.clamp, self.clamp)
        return self.act_fn(gate) * up

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden_states)
        for t in range(hidden_states.shape[0]):
            for j in range(top_k_index.shape[1]):
                e = int(top_k_index[t, j])
                bias = None if self.gate_up_proj_bias is None else self.gate_up_proj_bias[e]
                gate_up = torch.nn.functional.linear(hidden_states[t], self.gate_up_proj[e], bias)
                out[t] += top_k_weights[t, j] * (self.down_proj[e] @ self.gated(gate_up))
        return out


class OwnGateExperts(Experts):
    """A gate of its own, as transformers' `_apply_gate` overrides (gpt-oss, Step-3)."""

    def _apply_gate(self, gate_up):
        return self.gated(gate_up)


def test_experts_swapped_only_where_they_compute_the_same():
    """patch_model swaps an experts module for MoEExperts only where it has no other parameter (a bias), no gate of
    its own (a clamp would show only on large values) and gives the same output (the halves swapped do not); the
    swapped one agrees at decode sizes and takes the module's own forward under autograd."""
    from rooftop.integrations.hf import MoEExperts, patch_model

    class Block(torch.nn.Module):
        def __init__(self, experts):
            super().__init__()
            self.experts = experts

    for experts, swapped in ((Experts(swap=True), False), (OwnGateExperts(clamp=7.0), False),
                             (Experts(bias=True), False), (Experts(), True)):
        block = Block(experts.to(DEVICE))
        assert patch_model(block)["moe_experts"] == int(swapped)
        assert isinstance(block.experts, MoEExperts) == swapped
    x, index = torch.randn(2, 64, device=DEVICE), torch.randint(0, 4, (2, 2), device=DEVICE)
    weights = torch.rand(2, 2, device=DEVICE)
    with torch.no_grad():
        assert rel_err(block.experts(x, index, weights), experts(x, index, weights)) < 1e-4
    assert block.experts(x, index, weights.requires_grad_()).requires_grad  # autograd: the module's own forward


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("quant", [None, "fp8", "int4"])
@pytest.mark.parametrize("model", ["mixtral", "qwen3", "gpt-oss"])
def test_gpu_prefill_sizes(model, quant):
    """Prefills of Mixtral-8x7B's, Qwen3-30B-A3B's and gpt-oss-20b's experts (its gate and biases) as shipped (the
    sorted path: several blocks an expert), bf16, fp8 and int4 experts (gpt-oss's 2880: groups of 64), random
    routing."""
    T, E, k, H, I = {"mixtral": (512, 8, 2, 4096, 14336), "qwen3": (256, 128, 8, 2048, 768),
                     "gpt-oss": (256, 32, 4, 2880, 2880)}[model]
    x, _, weights, gate_up, down = _inputs(T, E, k, H, I)
    index = torch.rand(T, E, device=DEVICE).argsort(-1)[:, :k]
    assert moe._path(T, T * k, E, H, I, quant is not None) == "sorted"
    kwargs = {}
    if model == "gpt-oss":
        kwargs = dict(activation="swiglu_oai", gate_up_bias=torch.randn(E, 2 * I, device=DEVICE, dtype=x.dtype),
                      down_bias=torch.randn(E, H, device=DEVICE, dtype=x.dtype))
    if quant:
        gate_up, gate_up_scale, down, down_scale = moe.quantize_experts(gate_up, down, quant,
                                                                        64 if model == "gpt-oss" else 128)
        kwargs.update(gate_up_scale=gate_up_scale, down_scale=down_scale)
    out = rooftop.moe_experts(x, index, weights, gate_up, down, **kwargs)
    assert rel_err(out, moe_experts_reference(x, index, weights, gate_up, down, **kwargs)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_sorted_path_in_a_cuda_graph():
    """The sorted path (its widest blocks) waits for nothing on the host: a CUDA graph holds it, and its replays are
    right on new tokens and routing copied into the captured inputs."""
    from rooftop.bench.timing import capture_graph, synchronises_host
    T, E, k, H, I = 600, 8, 2, 256, 192
    x, index, weights, gate_up, down = _inputs(T, E, k, H, I)
    assert moe._path(T, T * k, E, H, I, False) == "sorted" and moe._sorted_launch(T * k, E, x.dtype)[0] == 128
    result = {}

    def call():
        result["out"] = rooftop.moe_experts(x, index, weights, gate_up, down)

    call()
    assert not synchronises_host(call)
    graph = capture_graph(call, call)
    for _ in range(2):
        fresh = _inputs(T, E, k, H, I)
        for captured, new in zip((x, index, weights), fresh[:3]):
            captured.copy_(new)
        index[0, 0] = -1
        graph.replay()
        torch.cuda.synchronize()
        assert rel_err(result["out"], moe_experts_reference(x, index, weights, gate_up, down)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_offsets_past_2_31(path):
    """Experts whose gate_up holds more than 2^31 elements (DeepSeek-V3's 256 x 4096 x 7168 does): the last expert's
    rows sit past int32 offsets."""
    E, H, I = 66, 4096, 4096
    x = torch.randn(1, H, device=DEVICE, dtype=torch.bfloat16)
    gate_up = torch.empty(E, 2 * I, H, device=DEVICE, dtype=torch.bfloat16).normal_(std=H**-0.5)
    down = torch.empty(E, H, I, device=DEVICE, dtype=torch.bfloat16).normal_(std=I**-0.5)
    assert gate_up.numel() > 2**31
    index = torch.tensor([[E - 1, 0]], device=DEVICE)
    weights = torch.tensor([[0.75, 0.25]], device=DEVICE)
    out = rooftop.moe_experts(x, index, weights, gate_up, down)
    assert rel_err(out, moe_experts_reference(x, index, weights, gate_up, down)) < TOL[torch.bfloat16]
