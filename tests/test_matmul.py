import itertools
import json

import pytest
import torch

import rooftop
import rooftop.ops.matmul as mm
from conftest import DEVICE, HAS_CUDA, TOL, fp8_linear_expected, rel_err, replayed_by_switch
from rooftop import registry
from rooftop.ops import _autotune, _support, matmul_sm90
from rooftop.ops._support import GluonDescriptor, Plans
from rooftop.ops.matmul import (ACTIVATIONS, gemm_cost, gemm_roofline, matmul, matmul_fp8, matmul_fp8_reference,
                                matmul_reference)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SM90 = HAS_CUDA and torch.cuda.get_device_capability() == (9, 0)
needs_sm90 = pytest.mark.skipif(not SM90, reason="the Gluon kernel needs an sm_90 GPU")
# (M, N, K): one row; odd and prime (output rows not 16-byte aligned: the grouped kernel); aligned
# (the TMA kernel; the interpreter runs it too); several tiles each way with K tails
SHAPES = [(1, 40, 24), (37, 29, 53), (64, 48, 96), (70, 96, 40)]
FP8 = torch.float8_e4m3fn


@pytest.fixture(autouse=True)
def fresh_autotune(tmp_path, monkeypatch):
    """A private autotune cache, no timing (the GPU keeps to the default configurations) unless a test
    turns it on, and no launch plans of earlier tests (each test's first call of a shape chooses)."""
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "0")
    monkeypatch.setattr(mm, "_plans", Plans())
    _autotune.forget()
    yield
    _autotune.forget()


@pytest.fixture
def kernels(monkeypatch):
    """The names of the kernels launched, in order."""
    names = []
    real = mm.launch

    def spy(kernel, grid, *args, **kwargs):
        names.append(kernel.fn.__name__)
        return real(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(mm, "launch", spy)
    return names


@pytest.fixture
def plan_misses(monkeypatch):
    """One entry per call that found no launch plan for its key (the slow path). CUDA keeps the plans of
    remembered choices only: tuning is on, and pretends to time (every candidate ties: the default)."""
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")
    monkeypatch.setattr(_autotune, "time_ms", lambda fn: 1.0)
    misses = []
    first_gemm = mm._first_gemm
    monkeypatch.setattr(mm, "_first_gemm", lambda *args: misses.append(args[0].shape) or first_gemm(*args))
    return misses


@pytest.fixture
def grouped_only(monkeypatch):
    monkeypatch.setattr(mm, "_use_tma", lambda a, b, out: None)


def _randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def _fp8_inputs(M, N, K, b_k_major=True):
    a = (torch.randn(M, K, device=DEVICE) * 8).to(FP8)
    b = (torch.randn(N, K, device=DEVICE) * 8).to(FP8).t() if b_k_major else \
        (torch.randn(K, N, device=DEVICE) * 8).to(FP8)
    return a, b, torch.rand(M, device=DEVICE) + 0.5, torch.rand(N, device=DEVICE) + 0.5


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape, dtype):
    M, N, K = shape
    a, b = _randn(M, K, dtype=dtype), _randn(K, N, dtype=dtype)
    out = matmul(a, b)
    assert out.shape == (M, N) and out.dtype == dtype
    assert rel_err(out, matmul_reference(a, b)) < TOL[dtype]


def test_dispatch(kernels, monkeypatch):
    """TMA where every operand allows it, the grouped kernel otherwise."""
    a, b = _randn(64, 96), _randn(96, 48)
    cases = [
        ((a, b), "_matmul_tma_kernel"),
        ((a.float(), b.float()), "_matmul_grouped_kernel"),  # IEEE fp32: FMA, not tensor cores
        ((a[:, 1:89], b[1:89]), "_matmul_grouped_kernel"),  # a's base not 16-byte aligned
        ((a, b[:, :45]), "_matmul_grouped_kernel"),  # output rows of 90 bytes
        ((a.view(2, 32, 96), b), "_matmul_tma_kernel"),  # batch folded into M
        ((_randn(2, 96, 32).transpose(1, 2), b), "_matmul_grouped_kernel"),  # cannot fold
        ((a.view(2, 32, 96), b.expand(2, 96, 48)), "_matmul_grouped_kernel"),  # batched b
    ]
    for (x, y), expected in cases:
        out = matmul(x, y)
        assert kernels[-1] == expected, (tuple(x.shape), x.stride(), expected)
        assert rel_err(out, matmul_reference(x, y)) < TOL[x.dtype]
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: "high")  # TF32 on the tensor cores
    out = matmul(a.float(), b.float())
    assert kernels[-1] == "_matmul_tma_kernel"
    assert rel_err(out, matmul_reference(a.float(), b.float())) < 5e-3


@pytest.mark.parametrize("path", ["tma", "grouped"])
@pytest.mark.parametrize("activation", [None, *ACTIVATIONS])
def test_epilogue(activation, path, request):
    if path == "grouped":
        request.getfixturevalue("grouped_only")
    M, N, K = 40, 64, 48
    a, b = _randn(M, K), _randn(K, N)
    bias, residual = _randn(N), _randn(M, N)
    out = matmul(a, b, bias, activation, residual)
    assert rel_err(out, matmul_reference(a, b, bias, activation, residual)) < TOL[torch.bfloat16]
    # each part on its own, and an output dtype other than the inputs'
    out = matmul(a, b, activation=activation, out_dtype=torch.float32)
    assert out.dtype == torch.float32
    assert rel_err(out, matmul_reference(a, b, activation=activation)) < 1e-5


@pytest.mark.parametrize("path", ["tma", "grouped"])
def test_mixed_dtypes_in_epilogue(path, request):
    if path == "grouped":
        request.getfixturevalue("grouped_only")
    a, b = _randn(33, 40, dtype=torch.float16), _randn(40, 32, dtype=torch.float16)
    bias, residual = _randn(32, dtype=torch.float32), _randn(33, 32, dtype=torch.bfloat16)
    out = matmul(a, b, bias, "gelu", residual, out_dtype=torch.bfloat16)
    assert out.dtype == torch.bfloat16
    assert rel_err(out, matmul_reference(a, b, bias, "gelu", residual)) < TOL[torch.bfloat16]
    out = matmul(a, b, residual=residual)  # residual bf16, output fp16
    assert out.dtype == torch.float16 and rel_err(out, matmul_reference(a, b, residual=residual)) < TOL[torch.float16]


@pytest.mark.parametrize("path", ["tma", "grouped"])
@pytest.mark.parametrize("a_t, b_t", [(False, True), (True, False), (True, True)])
def test_transposed_operands(a_t, b_t, path, request, kernels):
    """a.t() / b.t() views go in as they are (no copy): both strides reach the kernel."""
    if path == "grouped":
        request.getfixturevalue("grouped_only")
    M, N, K = 40, 48, 72
    a = _randn(K, M).t() if a_t else _randn(M, K)
    b = _randn(N, K).t() if b_t else _randn(K, N)
    bias = _randn(N)
    out = matmul(a, b, bias, "silu")
    assert kernels[-1] == f"_matmul_{path}_kernel"
    assert rel_err(out, matmul_reference(a, b, bias, "silu")) < TOL[torch.bfloat16]


def test_strided_views(kernels):
    big_a, big_b = _randn(50, 120), _randn(80, 72)
    a, b = big_a[3:43, 8:72], big_b[5:69, 8:56]  # row strides past the width, 16-byte aligned starts
    bias = _randn(96)[::2]  # stride 2
    residual = _randn(40, 96)[:, ::2]  # column stride 2
    out = matmul(a, b, bias, "relu", residual)
    assert kernels[-1] == "_matmul_tma_kernel"
    assert rel_err(out, matmul_reference(a, b, bias, "relu", residual)) < TOL[torch.bfloat16]
    a, b = big_a[3:43, 7:71], big_b[5:69, 1:49]  # unaligned
    out = matmul(a, b, bias, "relu", residual)
    assert kernels[-1] == "_matmul_grouped_kernel"
    assert rel_err(out, matmul_reference(a, b, bias, "relu", residual)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("form", ["a3_b2", "a3_b2_unfoldable", "a3_b3", "a2_b3"])
def test_batched(form):
    B, M, N, K = 3, 20, 32, 40
    a = {"a3_b2": _randn(B, M, K), "a3_b2_unfoldable": _randn(B, K, M).transpose(1, 2),
         "a3_b3": _randn(B, M, K), "a2_b3": _randn(M, K)}[form]
    b = _randn(B, N, K).transpose(1, 2) if form.endswith("b3") else _randn(K, N)
    bias, residual = _randn(N), _randn(B, M, N)
    out = matmul(a, b, bias, "gelu_tanh", residual)
    assert out.shape == (B, M, N)
    assert rel_err(out, matmul_reference(a, b, bias, "gelu_tanh", residual)) < TOL[torch.bfloat16]
    assert rel_err(matmul(a, b), torch.matmul(a.double(), b.double())) < TOL[torch.bfloat16]


def test_folded_batch_with_unfoldable_residual():
    a, b = _randn(2, 16, 32), _randn(32, 48)
    residual = _randn(16, 2, 48).transpose(0, 1)  # [2, 16, 48] that cannot be viewed as rows
    out = matmul(a, b, residual=residual)
    assert rel_err(out, matmul_reference(a, b, residual=residual)) < TOL[torch.bfloat16]


def test_tiny_and_empty():
    a, b = _randn(1, 1), _randn(1, 1)
    assert rel_err(matmul(a, b), matmul_reference(a, b)) < TOL[torch.bfloat16]
    # K = 0: the epilogue of a zero accumulator
    a, b, bias, residual = _randn(5, 0), _randn(0, 24), _randn(24), _randn(5, 24)
    out = matmul(a, b, bias, "silu", residual)
    assert rel_err(out, matmul_reference(a, b, bias, "silu", residual)) < TOL[torch.bfloat16]
    assert matmul(_randn(0, 8), _randn(8, 16)).shape == (0, 16)
    assert matmul(_randn(4, 8), _randn(8, 0)).shape == (4, 0)
    assert matmul(_randn(0, 4, 8), _randn(8, 16)).shape == (0, 4, 16)


def test_plan_serves_only_calls_like_the_first(plan_misses, kernels):
    """A second call like the first launches the first one's plan on its own tensors (no configuration
    choice, no launch helper); a call that differs only in alignment or in strides makes its own."""
    M, N, K = 40, 48, 64
    storage = _randn(M * K + 8)
    a, b, bias, residual = storage[:M * K].view(M, K), _randn(K, N), _randn(N), _randn(M, N)
    first = matmul(a, b, bias, "silu", residual)
    assert len(plan_misses) == 1 and kernels == ["_matmul_tma_kernel"]
    assert torch.equal(matmul(a, b, bias, "silu", residual), first)
    assert len(plan_misses) == 1 and len(kernels) == 1
    fresh = (_randn(M, K), _randn(K, N), _randn(N), _randn(M, N))  # other addresses, the same key
    assert rel_err(matmul(fresh[0], fresh[1], fresh[2], "silu", fresh[3]),
                   matmul_reference(fresh[0], fresh[1], fresh[2], "silu", fresh[3])) < TOL[torch.bfloat16]
    assert len(plan_misses) == 1
    # the same shape and strides one element on: not 16-byte aligned, so no TMA
    shifted = storage[1:M * K + 1].view(M, K)
    out = matmul(shifted, b, bias, "silu", residual)
    assert len(plan_misses) == 2 and kernels[-1] == "_matmul_grouped_kernel"
    assert rel_err(out, matmul_reference(shifted, b, bias, "silu", residual)) < TOL[torch.bfloat16]
    # other strides: b K-major; a residual of column stride 2 (read through pointers, not TMA)
    for x, y, res in [(a, _randn(N, K).t(), residual), (a, b, _randn(M, 2 * N)[:, ::2])]:
        out = matmul(x, y, bias, "silu", res)
        assert rel_err(out, matmul_reference(x, y, bias, "silu", res)) < TOL[torch.bfloat16]
    assert len(plan_misses) == 4 and len(mm._plans) == 4
    assert torch.equal(matmul(a, b, bias, "silu", residual), first) and len(plan_misses) == 4


def test_plan_of_a_folded_batch(plan_misses):
    """A 3-D a folded into M: the plan passes the 3-D tensors, whose addresses are the 2-D views'."""
    for _ in range(2):
        a, b, residual = _randn(2, 20, 32), _randn(32, 48), _randn(2, 20, 48)
        assert rel_err(matmul(a, b, residual=residual), matmul_reference(a, b, residual=residual)) < TOL[torch.bfloat16]
    assert len(plan_misses) == 1


@pytest.mark.parametrize("b_k_major", [True, False])
def test_fp8(b_k_major, kernels):
    M, N, K = 48, 64, 96
    a, b, a_scale, b_scale = _fp8_inputs(M, N, K, b_k_major)
    bias = _randn(N, dtype=torch.float32)
    out = matmul_fp8(a, b, a_scale, b_scale, bias)
    assert out.dtype == torch.bfloat16 and out.shape == (M, N)
    assert kernels[-1] == ("_matmul_tma_kernel" if b_k_major else "_matmul_grouped_kernel")
    assert rel_err(out, matmul_fp8_reference(a, b, a_scale, b_scale, bias)) < TOL[torch.bfloat16]
    # [M, 1] / [1, N] scales, one value for either, a strided one; other output dtypes
    one = torch.tensor(0.75, device=DEVICE)
    for sa, sb, dtype in [(a_scale[:, None], b_scale[None, :], torch.float16), (one, b_scale, torch.float32),
                          (torch.rand(2 * M, device=DEVICE)[::2] + 0.5, one.reshape(1), torch.bfloat16)]:
        out = matmul_fp8(a, b, sa, sb, out_dtype=dtype)
        assert out.dtype == dtype
        # Hopper's fp8 MMA accumulates with fewer bits than fp32 (about 1e-4 seen on the H200): an fp32
        # output is held to that, not to fp32 rounding
        assert rel_err(out, matmul_fp8_reference(a, b, sa, sb)) < max(TOL[dtype] * 2, 5e-4)


@pytest.mark.parametrize("N, K", [(80, 2000), (128, 2048)], ids=["ragged", "even"])
@pytest.mark.parametrize("M", [1, 5, 16])
def test_fp8_decode_split_k(M, N, K, kernels, plan_misses, monkeypatch):
    """matmul_fp8 at decode sizes (M <= 16, b = w.t()): the split-K kernel, K cut into splits whose fp32 partials the
    tile's last split sums (on a GPU 4-8 splits here, the interpreter 2), N and K ragged or whole tiles, a bias of
    either dtype, the scale forms, twice (the second call replays the plan; the arrival counters left at zero)."""
    splits = []
    split = mm._fp8_gemv_split
    monkeypatch.setattr(mm, "_fp8_gemv_split", lambda *args: splits.append(split(*args)[0]) or split(*args))
    a, b, a_scale, b_scale = _fp8_inputs(M, N, K)
    one = torch.tensor(0.75, device=DEVICE)
    for bias, sa, sb in [(_randn(N, dtype=torch.float32), a_scale, b_scale), (_randn(N), a_scale[:, None], one),
                         (None, one, b_scale[None, :])]:
        ref = matmul_fp8_reference(a, b, sa, sb, bias)
        for _ in range(2):
            assert rel_err(matmul_fp8(a, b, sa, sb, bias), ref) < TOL[torch.bfloat16]
    assert set(kernels) == {"_fp8_gemv_kernel"} and len(plan_misses) == 3 and min(splits) > 1
    if HAS_CUDA:
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(a.device, 64).count_nonzero()) == 0
    kernels.clear()
    matmul_fp8(*_fp8_inputs(M + 16, N, K))  # M past FP8_GEMV_MAX_M, b N-major, rows off 16 bytes, or K = 0: the
    matmul_fp8(*_fp8_inputs(M, N, K, b_k_major=False))  # GEMM kernels
    a, b, sa, sb = _fp8_inputs(M, N, K + 8)
    w = torch.empty(N, K + 16, device=DEVICE, dtype=FP8)[:, :K + 8].copy_(b.t())  # rows of 16-byte strides
    shifted = torch.empty(M, K + 16, device=DEVICE, dtype=FP8)[:, 8:K + 8].copy_(a[:, :K])  # at an address off 16
    strided = torch.empty(M, K + 8, device=DEVICE, dtype=FP8)[:, :K].copy_(a[:, :K])  # a row stride off 16
    # K off 16 (contiguous rows; padded ones), a's rows off 16-byte addresses, a's row stride off 16 (K 16 bytes)
    for a, b in ((a, b), (torch.empty(M, K + 16, device=DEVICE, dtype=FP8)[:, :K + 8].copy_(a), w.t()),
                 (shifted, w[:, :K].t()), (strided, w[:, :K].t())):
        assert rel_err(matmul_fp8(a, b, sa, sb), matmul_fp8_reference(a, b, sa, sb)) < TOL[torch.bfloat16]
    bias = _randn(N)
    assert torch.equal(matmul_fp8(*_fp8_inputs(M, N, 0), bias), bias.expand(M, N))  # K = 0: the bias alone
    assert "_fp8_gemv_kernel" not in kernels


@pytest.mark.parametrize("bias", [False, True])
def test_fp8_linear(bias):
    """Fp8Linear.from_linear: the weight's codes and per-channel scales as the format rounds them; forward(x) is x's
    rows quantized per token times them (matmul_fp8's exact maths on those operands), within fp8's precision of the
    bf16 linear; a (q, scale) pair from a fused op gives the same; leading dims kept, the weight's dtype out."""
    linear = torch.nn.Linear(96, 40, bias=bias).to(DEVICE).bfloat16()
    layer = mm.Fp8Linear.from_linear(linear)
    w = linear.weight.detach().double()
    assert layer.weight.dtype == FP8 and layer.weight_scale.dtype == torch.float32
    assert rel_err(layer.weight_scale, w.abs().amax(1) / 448.0) < 1e-6
    scale = layer.weight_scale.double()[:, None]  # each code within half an e4m3 step (or half its subnormal one)
    assert (layer.weight.double() * scale - w).abs().le(w.abs() / 16 * (1 + 1e-6) + scale * 2.0**-10).all()
    x = _randn(2, 5, 96)
    with torch.no_grad():
        out = layer(x)
        assert out.shape == (2, 5, 40) and out.dtype == torch.bfloat16
        q, scale = rooftop.quantize_rows(x, "fp8")
        exact = matmul_fp8_reference(q.reshape(10, 96), layer.weight.t(), scale.reshape(10), layer.weight_scale,
                                     layer.bias)
        assert rel_err(out.reshape(10, 40), exact) < TOL[torch.bfloat16]
        assert rel_err(out, linear(x).double()) < 0.1  # both operands in e4m3: ~5% RMS
        assert torch.equal(layer((q, scale)), out)


def test_fp8_linear_in_the_registry():
    """fp8_linear's registry entry: its bytes (x in bf16, the weight in fp8, the output once) and flops at the fp8
    roof; rooftop, the eager form and the reference agree (x quantized the same way: within bf16's rounding), and the
    bf16 cuBLAS peer with the dequantized weight within fp8's precision of x (~3%)."""
    spec = registry.get("fp8_linear")
    M, N, K = 512, 28672, 4096
    cost = spec.cost((M, N, K), torch.bfloat16)
    assert cost.flops == 2 * M * N * K and cost.bytes == 2 * M * K + N * K + 2 * M * N + 4 * N
    inputs = spec.make_inputs((33, 65, 70), torch.bfloat16, DEVICE)
    ref = spec.reference(*inputs)
    with torch.no_grad():
        assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.peers["cublas"]()(*inputs), ref) < 0.1


def test_fp8_linear_stacked_and_bad_input():
    parts = [mm.Fp8Linear.from_linear(torch.nn.Linear(64, n, bias=True).to(DEVICE).bfloat16()) for n in (24, 40)]
    both = mm.Fp8Linear.stacked(*parts)
    assert both.out_features == 64 and torch.equal(both.weight.view(torch.uint8),
                                                   torch.cat([p.weight for p in parts]).view(torch.uint8))
    x = _randn(3, 64)
    with torch.no_grad():
        assert rel_err(both(x), torch.cat([p(x) for p in parts], -1)) < TOL[torch.bfloat16]
    with pytest.raises(ValueError, match="parts must share in_features"):
        mm.Fp8Linear.stacked(parts[0], mm.Fp8Linear.from_linear(torch.nn.Linear(32, 8).to(DEVICE)))
    w8, scale = parts[0].weight, parts[0].weight_scale
    with pytest.raises(TypeError, match="weight must be a 2-D float8_e4m3fn tensor"):
        mm.Fp8Linear(w8.float(), scale)
    with pytest.raises(ValueError, match=r"weight_scale must be float32 of shape \(24,\)"):
        mm.Fp8Linear(w8, scale[:8])
    with pytest.raises(ValueError, match=r"bias must have shape \(24,\)"):
        mm.Fp8Linear(w8, scale, torch.zeros(8, device=DEVICE))
    with pytest.raises(TypeError, match="out_dtype must be one of"):
        mm.Fp8Linear(w8, scale, out_dtype=torch.int8)
    q_scale_r = rooftop.rms_norm(x, torch.ones(64, device=DEVICE, dtype=torch.bfloat16), residual=x, quant="fp8")
    with pytest.raises(TypeError, match=r"x must be a tensor or a \(q, scale\) pair, got a tuple of 3"):
        both(q_scale_r)
    with torch.no_grad():
        assert rel_err(both(q_scale_r[:2]), both(q_scale_r[0].float() * q_scale_r[1])) < TOL[torch.bfloat16]


def test_fp8_linear_keeps_its_codes_through_a_cast():
    """model.half() casts every floating tensor, float8 too: an Fp8Linear keeps its fp8 codes and fp32 scales, and
    its output follows the cast."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 24).to(DEVICE).bfloat16())
    rooftop.quantize_model(model, "fp8", skip=())
    codes = model[0].weight.clone()
    model.half()
    layer = model[0]
    assert layer.weight.dtype == FP8 and layer.weight_scale.dtype == torch.float32 and layer.out_dtype == torch.float16
    assert torch.equal(layer.weight.view(torch.uint8), codes.view(torch.uint8))
    with torch.no_grad():
        assert model(_randn(3, 64, dtype=torch.float16)).dtype == torch.float16


def test_bad_input():
    a, b = _randn(4, 8), _randn(8, 16)
    bad = [
        (TypeError, "a has dtype int64", lambda: matmul(a.long(), b)),
        (TypeError, "b has dtype float16 but a has", lambda: matmul(a, b.half())),
        (ValueError, "b has 7 rows but a has K = 8", lambda: matmul(a, b[:7])),
        (ValueError, "a must be", lambda: matmul(a[0], b)),
        (ValueError, "b must be", lambda: matmul(a, b[None, None])),
        (ValueError, "b has batch 3 but a has batch 2", lambda: matmul(_randn(2, 4, 8), _randn(3, 8, 16))),
        (ValueError, r"bias must have shape \(16,\)", lambda: matmul(a, b, bias=_randn(8))),
        (ValueError, "residual has shape", lambda: matmul(a, b, residual=_randn(4, 8))),
        (ValueError, "activation must be None or one of", lambda: matmul(a, b, activation="tanh")),
        (TypeError, "activation must be None or a str", lambda: matmul(a, b, activation=torch.tanh)),
        (TypeError, "out_dtype must be one of", lambda: matmul(a, b, out_dtype=torch.int32)),
        (ValueError, "b is on meta", lambda: matmul(a, torch.empty(8, 16, device="meta", dtype=a.dtype))),
        (ValueError, "bias is on meta", lambda: matmul(a, b, bias=torch.empty(16, device="meta", dtype=a.dtype))),
        (TypeError, "residual has dtype int32", lambda: matmul(a, b, residual=torch.ones(4, 16, dtype=torch.int32,
                                                                                        device=DEVICE))),
        (RuntimeError, "a requires grad", lambda: matmul(a.float().requires_grad_(), b.float())),
    ]
    a8, b8, sa, sb = _fp8_inputs(4, 16, 8)
    bad += [
        (TypeError, "a has dtype bfloat16; expected one of float8_e4m3fn", lambda: matmul_fp8(a, b8, sa, sb)),
        (ValueError, "matmul_fp8 takes 2-D", lambda: matmul_fp8(a8[None], b8, sa, sb)),
        (TypeError, "a_scale has dtype bfloat16", lambda: matmul_fp8(a8, b8, sa.bfloat16(), sb)),
        (ValueError, "a_scale must have shape", lambda: matmul_fp8(a8, b8, sa[:3], sb)),
        (ValueError, "b_scale must have shape", lambda: matmul_fp8(a8, b8, sa, sb[:, None])),
        (TypeError, "out_dtype must be one of", lambda: matmul_fp8(a8, b8, sa, sb, out_dtype=FP8)),
    ]
    for error, message, call in bad:
        with pytest.raises(error, match=message):
            call()


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    def mlp(x, w_up, bias, w_down, residual, x8, w8, s8a, s8b):
        h = matmul(x, w_up.t(), bias, "silu")
        y = matmul(h, w_down.t(), residual=residual) * 2.0
        return y, matmul_fp8(x8, w8.t(), s8a, s8b)

    x, w_up, bias = _randn(8, 32), _randn(64, 32), _randn(64)
    w_down, residual = _randn(32, 64), _randn(8, 32)
    x8, w8t, s8a, s8b = _fp8_inputs(8, 16, 32)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    y, y8 = torch.compile(mlp, backend=counter, fullgraph=True)(x, w_up, bias, w_down, residual, x8, w8t.t(),
                                                                 s8a, s8b)
    assert counter.frame_count == 1
    h = matmul_reference(x, w_up.t(), bias, "silu").bfloat16()
    assert rel_err(y, 2 * matmul_reference(h, w_down.t(), residual=residual)) < 2 * TOL[torch.bfloat16]
    assert rel_err(y8, matmul_fp8_reference(x8, w8t, s8a, s8b)) < TOL[torch.bfloat16]


def test_autotune_times_once_and_remembers_on_disk(tmp_path, monkeypatch):
    configs = ({"BLOCK": 16}, {"BLOCK": 32}, {"BLOCK": 64}, {"BLOCK": 128})
    ms = {16: 3.0, 32: 1.0, 64: 2.0}
    ran = []

    def run(config):
        ran.append(config)
        if config["BLOCK"] == 128:
            raise RuntimeError("out of resources")  # skipped, not fatal

    monkeypatch.setattr(_autotune, "time_ms", lambda fn: (fn(), ms[ran[-1]["BLOCK"]])[1])
    key = (1024, torch.bfloat16, None)
    assert _autotune.choose("op", key, configs, run, device="dev", tune=False) == configs[0]
    assert ran == [] and not list(tmp_path.iterdir())  # no timing, nothing remembered
    with pytest.warns(UserWarning, match="skipped"):
        assert _autotune.choose("op", key, configs, run, device="dev", tune=True) == {"BLOCK": 32}
    assert ran == list(configs)
    [path] = tmp_path.iterdir()
    assert json.loads(path.read_text()) == {"op|1024|torch.bfloat16|None": {"BLOCK": 32}}
    _autotune.forget()  # a new process: the choice comes from the file, nothing is timed
    ran.clear()
    assert _autotune.choose("op", key, configs, run, device="dev", tune=True) == {"BLOCK": 32}
    assert ran == []
    _autotune.forget()  # candidates changed: the stale entry is tuned again
    with pytest.warns(UserWarning, match="skipped"):
        assert _autotune.choose("op", key, configs[2:], run, device="dev", tune=True) == {"BLOCK": 64}
    assert len(json.loads(path.read_text())) == 1


def test_autotune_remembers_nothing_when_no_candidate_runs(tmp_path, monkeypatch):
    def run(config):
        raise RuntimeError("out of resources")

    monkeypatch.setattr(_autotune, "time_ms", lambda fn: fn())
    with pytest.warns(UserWarning, match="skipped"):
        assert _autotune.choose("op", (1,), ({"A": 1}, {"A": 2}), run, device="dev", tune=True) == {"A": 1}
    assert not list(tmp_path.iterdir())


def test_no_tuning_on_the_interpreter(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")
    monkeypatch.setattr(_autotune, "time_ms", lambda fn: pytest.fail("timed a configuration"))
    a = torch.randn(16, 32, dtype=torch.bfloat16)
    assert not _autotune.may_tune(a)
    if not HAS_CUDA:
        matmul(a, torch.randn(32, 16, dtype=torch.bfloat16))
        assert not list(tmp_path.iterdir())


def test_candidate_configurations(monkeypatch):
    """The pruned lists on an H200-like device: never empty, within shared memory, default first."""
    monkeypatch.setattr(mm, "_device_limits", lambda index: (132, 232448, 9))
    mm._configs.cache_clear()
    try:
        epilogues = [(0, False, None), (0, False, "gelu"), (0, False, "silu"), (2, True, "silu"), (4, True, None),
                     (2, False, None)]  # (residual itemsize, residual read by TMA, activation)
        for tma, fma, itemsize in [(True, False, 2), (False, False, 2), (True, False, 1), (False, True, 4)]:
            for M, N in [(1, 4096), (48, 40), (100, 4096), (512, 4096), (1000, 48), (8192, 28672)]:
                for out_size, (res_size, res_tma, activation) in itertools.product((2, 4), epilogues):
                    configs = mm._configs(tma, False, fma, M, N, 1, itemsize, out_size, res_size, res_tma,
                                          activation, 0)
                    assert configs and configs[0]["KERNEL"] == ("tma" if tma else "grouped")
                    assert sum(c["KERNEL"] == "grouped" for c in configs) <= (mm.GROUPED_EXTRA if tma else 99)
                    assert len(configs) == len({tuple(c.items()) for c in configs})
                    for c in configs:
                        assert c["BLOCK_N"] <= max(32, _autotune.bucket(N)) and c["BLOCK_K"] * itemsize in (128, 256)
                        smem = c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * itemsize
                        if c["KERNEL"] == "tma":
                            smem += c["BLOCK_M"] * c["BLOCK_N"] // (1 + c["EPILOGUE_SUBTILE"]) * (out_size + res_size)
                        assert smem <= 232448 - mm.SMEM_RESERVE
                        # no tile that spills with this epilogue: 128 accumulator registers a thread take
                        # a light epilogue over the whole tile, or a TMA-read residual over half of it
                        if c["BLOCK_M"] * c["BLOCK_N"] >= 128 * 32 * c["num_warps"]:
                            assert not (not c.get("EPILOGUE_SUBTILE") and (res_size or activation == "gelu"))
                            assert not res_size or (res_tma and c["KERNEL"] == "tma")
        big = mm._configs(True, False, False, 8192, 8192, 1, 2, 2, 0, False, None, 0)[0]
        assert (big["BLOCK_M"], big["BLOCK_N"], big["BLOCK_K"], big["EPILOGUE_SUBTILE"]) == (128, 256, 64, True)
        assert mm._configs(True, False, False, 8192, 8192, 1, 2, 2, 2, True, "silu", 0)[0] == big  # the residual by TMA
        # 512 x 4096 has 64 tiles of 128 x 256 for 132 SMs: the default takes 128 x 128 (128 tiles)
        prefill = mm._configs(True, False, False, 512, 4096, 1, 2, 2, 0, False, None, 0)[0]
        assert (prefill["BLOCK_M"], prefill["BLOCK_N"]) == (128, 128)
        assert mm._configs(True, False, False, 8192, 8192, 1, 1, 2, 0, False, None, 0)[0]["BLOCK_K"] == 128  # fp8
        # the Gluon variants right after the Triton default, those whose staging buffers fit (fp32 out: 2 of
        # the 4 data-parallel ones), stream-K where its tiles fill the last wave under 90% (132 SMs: 512 x 4096
        # has 64 tiles of 128 x 256 and 128 of 128 x 128, 4096 x 200 32 and 64, 8192^2 2048 and 4096), the
        # 192 / 160 widths where their tiles fill the waves to 95% and 128 / 256 do not (512 x 6144: 128 tiles of
        # 128 x 192, 97%, against 73%; 512 x 10240: 256 of 128 x 160, 97%, against 81% / 61%; 8192^2: 99% against
        # 97%, not timed)
        variants = [v.config() for v in matmul_sm90.VARIANTS]
        sk_256, sk_128 = "coop_2wg_128x256x64_s3_streamk", "coop_1wg_128x128x64_s5_streamk"
        w_192, w_160 = "coop_2wg_128x192x64_s4", "coop_2wg_128x160x64_s5"
        for M, N, out_size, res_size, data_parallel, stream_k, wave in [
                (512, 4096, 2, 0, 4, [sk_256], []), (8192, 8192, 2, 2, 4, [], []), (512, 4096, 4, 4, 2, [], []),
                (4096, 200, 2, 0, 4, [sk_256, sk_128], []), (9000, 264, 2, 0, 4, [], []),  # 71 tile rows
                (512, 6144, 2, 2, 4, [sk_256, sk_128], [w_192]), (512, 10240, 2, 0, 4, [sk_256, sk_128], [w_160]),
                (512, 6144, 4, 4, 2, [sk_128], []),  # fp32 out: the 192 / 160 staging buffers do not fit
                (2048, 6144, 2, 0, 4, [], [])]:  # 97% each way
            plain = mm._configs(True, False, False, M, N, 1, 2, out_size, res_size, True, "silu", 0)
            configs = mm._configs(True, True, False, M, N, 1, 2, out_size, res_size, True, "silu", 0)
            gluon = [c for c in configs if c["KERNEL"] == "gluon"]
            assert configs[0] == plain[0] and configs[1:1 + len(gluon)] == tuple(gluon)
            assert tuple(c for c in configs if c["KERNEL"] != "gluon") == plain
            assert all(c in variants for c in gluon)
            names = [matmul_sm90.Variant.of(c).name for c in gluon]
            assert len(names) == data_parallel + len(stream_k) + len(wave), (M, N, names)
            assert [n for n in names if "streamk" in n] == stream_k
            assert [n for n in names if n in (w_192, w_160)] == wave
            assert all(matmul_sm90.Variant.of(c).smem_bytes(2, out_size) <= 232448 - mm.SMEM_RESERVE for c in gluon)
    finally:
        mm._configs.cache_clear()


def test_gluon_never_on_the_cpu(monkeypatch):
    """Gluon has no interpreter: a CPU call that would take the Gluon kernel on an H200 lists no
    candidate of it."""
    a, out = torch.randn(512, 64, dtype=torch.bfloat16), torch.empty(512, 32, dtype=torch.bfloat16)
    assert not mm._use_gluon(a, out, None, None, (True, False, 64, 32), False)
    if HAS_CUDA:
        return  # CPU tensors run the reference there, not the interpreter
    asked = []
    choose = _autotune.choose
    monkeypatch.setattr(_autotune, "choose", lambda op, key, configs, *args, **kw: asked.append(configs)
                        or choose(op, key, configs, *args, **kw))
    a, b, bias = _randn(mm.GLUON_MIN_M, 32), _randn(32, 32), _randn(32)
    assert rel_err(matmul(a, b, bias, "silu"), matmul_reference(a, b, bias, "silu")) < TOL[torch.bfloat16]
    assert asked and not any(c["KERNEL"] == "gluon" for c in asked[0])


def test_gluon_stream_k_plan_grid():
    """Stream-K's grid and workspace (built without a GPU): groups of one program per tile row, as many as
    the SMs hold; data-parallel, with placeholders, where fewer than two groups fit."""
    v = next(v for v in matmul_sm90.VARIANTS if v.stream_k and v.block_n == 128)
    for M, N, K, grid, partials in [(512, 10240, 8192, 132, 132 * 2 * 128 * 128),  # 33 groups of 4
                                    (300, 264, 128, 6 * 3, 6 * 3 * 2 * 128 * 128),  # 3 x 2 k-steps: 6 groups
                                    (9000, 264, 64, 132, 1)]:  # 71 tile rows: one group, data-parallel
        a, b = torch.empty(M, K, dtype=torch.bfloat16), torch.empty(K, N, dtype=torch.bfloat16)
        plan = matmul_sm90.WarpSpecializedPlan(v, a, b, False, torch.empty(M, N, dtype=torch.bfloat16), None, None,
                                               None, 132)
        assert plan.launch.grid == (grid,) and plan.partials == partials, (M, N, K)
        assert plan.counters == (1 if partials == 1 else -(-M // 128) * -(-N // 128))
    with pytest.raises(ValueError, match="stream_k"):
        matmul_sm90.Variant(128, 128, 4, 2, True, True)
    with pytest.raises(ValueError, match="stream_k"):
        matmul_sm90.Variant(128, 192, 4, 2, False, True)
    for block_n in (96, 384):
        with pytest.raises(ValueError, match="block_n"):
            matmul_sm90.Variant(128, block_n, 4, 2, False)


def test_gluon_plan_descriptors():
    """The Gluon plan's host descriptors (built without a GPU): a [M, K] over its row stride, b either
    way round, the output, the residual over its own rows; one program per tile, at most one per SM."""
    v = matmul_sm90.VARIANTS[0]  # 64-row boxes a consumer, 256 columns
    M, N, K = 300, 200, 72
    a = torch.randn(M, 96, dtype=torch.bfloat16)[:, :K]
    out = torch.empty(M, N, dtype=torch.bfloat16)
    residual = torch.randn(M, 264, dtype=torch.bfloat16)[:, :N]
    for b, b_k_major in [(torch.randn(K, N, dtype=torch.bfloat16), False),
                         (torch.randn(N, K, dtype=torch.bfloat16).t(), True)]:
        plan = matmul_sm90.WarpSpecializedPlan(v, a, b, b_k_major, out, None, residual, "silu", 132)
        a_desc, b_desc, c_desc, res_desc = (d[:3] for d in plan.launch.descriptors)
        assert a_desc == ([M, K], [96, 1], [64, 64])
        assert b_desc == (([N, K], [K, 1], [256, 64]) if b_k_major else ([K, N], [N, 1], [64, 256]))
        assert c_desc == ([M, N], [N, 1], [64, 256]) and res_desc == ([M, N], [264, 1], [64, 256])
        assert plan.sizes == (M, N, K) and plan.launch.grid == (3,)
        assert plan.launch.constexprs["B_K_MAJOR"] == b_k_major and plan.launch.constexprs["HAS_RESIDUAL"]
        for t, d in zip((a, b, out, residual), plan.launch.descriptors):
            GluonDescriptor(t, *d)  # what a first call builds: its checks pass
    # 128 x 160: b's and the output's boxes 32 columns (the tile's 128 + 32 in whole boxes)
    v = next(v for v in matmul_sm90.VARIANTS if v.block_n == 160)
    b = torch.randn(N, K, dtype=torch.bfloat16).t()
    plan = matmul_sm90.WarpSpecializedPlan(v, a, b, True, out, None, residual, None, 132)
    assert [d[2] for d in plan.launch.descriptors] == [[64, 64], [32, 64], [64, 32], [64, 32]]
    assert plan.launch.constexprs["BLOCK_N"] == 160 and plan.launch.grid == (3 * 2,)
    for t, d in zip((a, b, out, residual), plan.launch.descriptors):
        GluonDescriptor(t, *d)


def test_registry_cases_and_costs():
    specs = {s.name: s for s in registry.all_ops() if s.family == "matmul"}
    assert set(specs) == {"matmul", "matmul_bias_silu", "matmul_residual", "matmul_fp8", "fp8_linear"}
    cases = specs["matmul"].cases
    assert (8192, 8192, 8192) in cases and (512, 28672, 4096) in cases and (8192, 8192, 28672) in cases
    assert all(s.x_key == "M" for s in specs.values())
    cost = gemm_cost((512, 28672, 4096), torch.bfloat16)
    assert cost.flops == 2 * 512 * 28672 * 4096
    assert cost.bytes == 2 * (512 * 4096 + 4096 * 28672 + 512 * 28672)
    assert specs["matmul_residual"].cost((4, 8, 16), torch.bfloat16).bytes == 2 * (64 + 128 + 2 * 32)
    assert specs["matmul_fp8"].cost((4, 8, 16), torch.bfloat16).bytes == 64 + 128 + 2 * 32 + 4 * 12
    for spec in specs.values():  # the declared callables agree on a small case
        inputs = spec.make_inputs((24, 32, 48), torch.bfloat16, DEVICE)
        ref = spec.reference(*inputs)
        assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs), ref) < 2 * TOL[torch.bfloat16]


def test_gemm_roofline():
    from rooftop.hardware import ceilings_for
    from rooftop.roofline import ridge_point

    ceilings = ceilings_for("NVIDIA H200")  # datasheet (the cache dir is empty)
    rows = gemm_roofline(ceilings)
    assert len(rows) == 8 * 14
    by = {(r["model"], r["layer"], r["M"]): r for r in rows}
    decode, prefill = by[("llama3-8b", "gate_up", 1)], by[("llama3-8b", "gate_up", 8192)]
    assert decode["bound"] == "memory" and prefill["bound"] == "compute"
    assert decode["intensity"] == pytest.approx(2 * 28672 * 4096 / (2 * (4096 + 4096 * 28672 + 28672)))
    assert prefill["ridge"] == pytest.approx(ridge_point(ceilings))
    for model, layer in mm.ALL_LAYERS:  # memory-bound below the ridge, compute-bound above, once
        bounds = [by[(model, layer, m)]["bound"] for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,
                                                          4096, 8192)]
        assert bounds == sorted(bounds, key=lambda b: b == "compute")


# ---------------------------------------------------------------------------------------------
# On the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1024, 1024, 8192), (4096, 4096, 8192), (1, 4096, 8192), (333, 1000, 8192)])
def test_gpu_long_k(shape, kernels):
    M, N, K = shape
    a, b = torch.randn(M, K, device="cuda", dtype=torch.bfloat16), torch.randn(N, K, device="cuda",
                                                                              dtype=torch.bfloat16).t()
    bias, residual = torch.randn(N, device="cuda", dtype=torch.bfloat16), torch.randn(M, N, device="cuda",
                                                                                     dtype=torch.bfloat16)
    out = matmul(a, b, bias, "silu", residual)
    assert kernels[-1] == ("_matmul_tma_kernel" if (N * 2) % 16 == 0 else "_matmul_grouped_kernel")
    assert rel_err(out, matmul_reference(a, b, bias, "silu", residual)) < 1e-2
    assert rel_err(matmul(a, b), matmul_reference(a, b)) < 1e-2


def _problems():
    """(name, call, float64 reference) covering each table of candidates, both kernels and fp8."""
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*s, dtype=torch.bfloat16):
        return torch.randn(*s, device="cuda", dtype=dtype, generator=g)

    def gemm(name, a, b, **kwargs):
        return name, lambda: matmul(a, b, **kwargs), matmul_reference(a, b, **kwargs)

    a8, b8, sa, sb = _fp8_inputs(1024, 768, 2048)
    bias8 = r(768)
    x8, w8, sx, sw = _fp8_inputs(4, 4096, 14336)  # a decode step's down projection: the split-K kernel's candidates
    bias_decode = r(4096)
    return [
        gemm("large", r(2048, 1024), r(1536, 1024).t(), bias=r(1536), activation="silu", residual=r(2048, 1536)),
        gemm("medium", r(100, 2048), r(2048, 1024)),
        gemm("small", r(7, 4096), r(4096, 4096).t(), activation="gelu"),
        gemm("a_t", r(1024, 512).t(), r(1024, 768), residual=r(512, 768)),
        gemm("grouped", r(300, 1001)[:, 1:], r(1000, 999), bias=r(999)),
        gemm("fp32", r(256, 512, dtype=torch.float32), r(512, 256, dtype=torch.float32)),
        ("fp8", lambda: matmul_fp8(a8, b8, sa, sb, bias8), matmul_fp8_reference(a8, b8, sa, sb, bias8)),
        ("fp8_decode", lambda: matmul_fp8(x8, w8, sx, sw, bias_decode),
         matmul_fp8_reference(x8, w8, sx, sw, bias_decode)),
    ]


@pytest.mark.gpu
def test_gpu_every_candidate_configuration_is_correct(monkeypatch):
    """The tuner may pick any candidate: each one must be right."""
    for name, call, ref in _problems():
        asked = []
        monkeypatch.setattr(_autotune, "choose", lambda op, key, configs, *args, **kw: asked.append(configs)
                            or configs[0])
        call()
        candidates = asked[0]
        assert len(candidates) > 1, name
        for config in candidates:
            monkeypatch.setattr(_autotune, "choose", lambda *args, config=config, **kw: config)
            mm._plans.clear()  # the previous candidate's plan
            tol = 5e-3 if name == "fp32" else TOL[torch.bfloat16]
            assert rel_err(call(), ref) < tol, (name, config)


@pytest.mark.gpu
def test_gpu_autotune_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")
    timed = []
    real_time = _autotune.time_ms
    monkeypatch.setattr(_autotune, "time_ms", lambda fn: (timed.append(1), real_time(fn))[1])
    a, b = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16), torch.randn(1024, 2048, device="cuda",
                                                                                   dtype=torch.bfloat16)
    out = matmul(a, b)
    assert len(timed) > 1 and rel_err(out, matmul_reference(a, b)) < TOL[torch.bfloat16]
    [path] = tmp_path.glob("autotune-*.json")
    assert any(key.startswith("matmul|512|2048|1024") for key in json.loads(path.read_text()))
    _autotune.forget()
    timed.clear()
    assert rel_err(matmul(a, b), matmul_reference(a, b)) < TOL[torch.bfloat16]
    assert timed == []


@pytest.mark.gpu
def test_gpu_fp8_against_scaled_mm():
    a, b, a_scale, b_scale = _fp8_inputs(1024, 2048, 4096)
    out = matmul_fp8(a, b, a_scale, b_scale)
    ref = matmul_fp8_reference(a, b, a_scale, b_scale)
    assert rel_err(out, ref) < 1e-2
    peer = torch._scaled_mm(a, b, scale_a=a_scale[:, None], scale_b=b_scale[None, :], out_dtype=torch.bfloat16)
    assert rel_err(out, peer.double()) < 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("M", [1, 16, 512])
def test_gpu_fp8_linear_llama_shapes(M):
    """fp8_linear at Llama-3-8B's gate / up and down shapes, decode to prefill: x quantized per token, then
    matmul_fp8, against x as quantize_rows quantizes it times the weight in float64."""
    for N, K in ((28672, 4096), (4096, 14336)):
        x, codes, scale, _ = mm._make_fp8_linear((M, N, K), torch.bfloat16, "cuda")
        assert rel_err(mm.fp8_linear(x, codes, scale), fp8_linear_expected(x, codes, scale)) < 1e-2


@pytest.mark.gpu
def test_gpu_peers_run():
    for spec in registry.all_ops():
        if spec.family != "matmul":
            continue
        inputs = spec.make_inputs((256, 512, 1024), torch.bfloat16, "cuda")
        ref = spec.reference(*inputs)
        for name, factory in spec.peers.items():
            fn = factory()
            # fp8_linear's cuBLAS peer multiplies x unquantized: fp8's precision of x apart (~3%)
            tol = 0.1 if (spec.name, name) == ("fp8_linear", "cublas") else 2e-2
            if fn is not None:
                assert rel_err(fn(*inputs), ref) < tol, (spec.name, name)


@pytest.mark.gpu
def test_gpu_cuda_graph_capture():
    a, b = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16), torch.randn(768, 512, device="cuda",
                                                                                  dtype=torch.bfloat16).t()
    bias = torch.randn(768, device="cuda", dtype=torch.bfloat16)
    matmul(a, b, bias, "silu")  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = matmul(a, b, bias, "silu")
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        graph.replay()
        assert rel_err(out, matmul_reference(a, b, bias, "silu")) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_plan_kept_only_for_a_remembered_choice(plan_misses, monkeypatch):
    """The untuned default while tuning is deferred (as in graph capture) makes no plan: a later call
    may tune. Once tuned, the plan serves the next calls."""
    a, b = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16), torch.randn(256, 192, device="cuda",
                                                                                  dtype=torch.bfloat16)
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")
    with monkeypatch.context() as deferred:
        deferred.setattr(_autotune, "may_tune", lambda t: False)
        matmul(a, b)
        matmul(a, b)
    assert len(plan_misses) == 2 and not mm._plans
    for _ in range(2):
        assert rel_err(matmul(a, b), matmul_reference(a, b)) < TOL[torch.bfloat16]
    assert len(plan_misses) == 3 and len(mm._plans) == 1


def _replays_under_cuda_graph(recorded: list, expected: int) -> None:
    """matmul(a, w.t(), bias, "silu", residual) once, then once under CUDA-graph capture: `recorded` (what
    a fixture spied on) then holds `expected` entries, and two replays on new values of a match the
    reference."""
    a = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(768, 512, device="cuda", dtype=torch.bfloat16).t()
    bias, residual = torch.randn(768, device="cuda", dtype=torch.bfloat16), torch.randn(256, 768, device="cuda",
                                                                                       dtype=torch.bfloat16)
    matmul(a, b, bias, "silu", residual)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = matmul(a, b, bias, "silu", residual)
    assert len(recorded) == expected
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        graph.replay()
        assert rel_err(out, matmul_reference(a, b, bias, "silu", residual)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_plan_under_cuda_graph_capture(plan_misses):
    """A plan made before a capture launches inside it (the TMA workspace then comes from the graph's
    pool) and replays right: one plan miss, the first call."""
    _replays_under_cuda_graph(plan_misses, 1)


@pytest.fixture
def gluon_launches(monkeypatch):
    """The constexprs of each launch of the Gluon kernel (matmul_sm90), in order."""
    launches = []
    real = matmul_sm90.WarpSpecializedPlan.__call__

    def spy(plan, *args):
        launches.append(plan.launch.constexprs)
        return real(plan, *args)

    monkeypatch.setattr(matmul_sm90.WarpSpecializedPlan, "__call__", spy)
    return launches


def _choose_always(monkeypatch, config: dict) -> None:
    """Every matmul call takes `config`, which must be among its candidates."""

    def choose(op, key, configs, run, **kw):
        assert config in configs, (key, configs)
        return config

    monkeypatch.setattr(_autotune, "choose", choose)
    mm._plans.clear()


def _gluon_cases():
    """(what, call, float64 reference, out dtype, (M, N)): square and ragged shapes (M, N, K no tile
    multiples, a K tail), one large, fp16 and bf16, b as [K, N] and as w.t(), each epilogue, a folded batch,
    a K much longer than M, N (stream-K cuts each tile between dozens of programs), and for each wave-fitting
    width w (128 + lo columns) an N that the tuner times it at: M = 512 (4 tile rows) and a quarter of the
    SMs' tiles in a row, the last one ragged in its lo columns or ending in its first 128 (lo all past N)."""
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*s, dtype=torch.bfloat16):
        return torch.randn(*s, device="cuda", dtype=dtype, generator=g)

    def case(what, a, b, **kwargs):
        out_dtype = kwargs.get("out_dtype", a.dtype)
        kwargs_ref = {k: v for k, v in kwargs.items() if k != "out_dtype"}
        folded = (a.numel() // a.shape[-1], b.shape[-1])
        return what, lambda: matmul(a, b, **kwargs), matmul_reference(a, b, **kwargs_ref), out_dtype, folded

    h = torch.float16
    tiles_in_row = torch.cuda.get_device_properties(0).multi_processor_count // 4
    wave = []
    for w in sorted({v.block_n for v in matmul_sm90.VARIANTS if v.wave_fit}):
        lo_ragged, lo_past_n = tiles_in_row * w - 24, (tiles_in_row - 1) * w + 104
        wave += [case(f"wave {w}: N {lo_ragged}, w.t() bias silu residual", r(512, 200), r(lo_ragged, 200).t(),
                      bias=r(lo_ragged), activation="silu", residual=r(512, lo_ragged)),
                 case(f"wave {w}: N {lo_past_n}, fp16", r(512, 200, dtype=h), r(200, lo_past_n, dtype=h))]
    return [
        case("square", r(256, 256), r(256, 256)),
        case("ragged w.t() bias silu", r(130, 72), r(200, 72).t(), bias=r(200), activation="silu"),
        case("ragged fp16 gelu_tanh residual", r(130, 72, dtype=h), r(72, 200, dtype=h), activation="gelu_tanh",
             residual=r(130, 200, dtype=h)),
        case("large bias silu residual", r(512, 4096), r(4096, 4096) / 64, bias=r(4096), activation="silu",
             residual=r(512, 4096)),
        case("large fp16 w.t() relu", r(512, 4096, dtype=h), r(4096, 4096, dtype=h).t() / 64, activation="relu"),
        case("fp32 out, fp32 residual", r(300, 200), r(200, 264), bias=r(264, dtype=torch.float32), activation="silu",
             residual=r(300, 264, dtype=torch.float32), out_dtype=torch.float32),
        case("folded batch, strided rows", r(2, 100, 96)[..., :72], r(72, 136), residual=r(2, 100, 136)),
        case("long K bias silu residual", r(256, 8200), r(8200, 264) / 64, bias=r(264), activation="silu",
             residual=r(256, 264)),
        # several tiles a program: each tile's residual lands in the staging buffers its previous tile stored from
        case("many tiles a program, residual", r(2048, 520), r(520, 4096) / 16, residual=r(2048, 4096)),
    ] + wave


@needs_sm90
@pytest.mark.parametrize("variant", matmul_sm90.VARIANTS, ids=lambda v: v.name)
def test_gpu_gluon_variant(variant, monkeypatch, gluon_launches):
    """Each Gluon variant against the float64 reference on every case whose staging buffers it fits and
    for which the tuner would time it."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ran = 0
    for what, call, ref, out_dtype, (M, N) in _gluon_cases():
        if variant.smem_bytes(2, out_dtype.itemsize) > 232448 - mm.SMEM_RESERVE or not matmul_sm90.timed(
                variant, M, N, sms):
            continue
        ran += 1
        _choose_always(monkeypatch, variant.config())
        launches = len(gluon_launches)
        out = call()
        assert len(gluon_launches) == launches + 1, what
        assert out.dtype == out_dtype and rel_err(out, ref) < TOL[out_dtype], (what, rel_err(out, ref))
        assert torch.equal(call(), out), what  # the kept plan, launched directly
    assert ran, f"{variant.name}: no case it is timed at"


@needs_sm90
def test_gpu_gluon_candidates_where_they_apply(monkeypatch):
    asked = []

    def listed(*args, **kwargs) -> bool:
        mm._plans.clear()
        monkeypatch.setattr(_autotune, "choose", lambda op, key, configs, *a, **kw: asked.append((key, configs))
                            or configs[0])
        matmul(*args, **kwargs)
        key, configs = asked[-1]
        gluon = any(c["KERNEL"] == "gluon" for c in configs)
        assert gluon == ("gluon" in key) and configs[0]["KERNEL"] != "gluon"  # the untuned default: Triton
        return gluon

    def r(*s, dtype=torch.bfloat16):
        return torch.randn(*s, device="cuda", dtype=dtype)

    a, b = r(512, 256), r(256, 384)
    assert listed(a, b) and listed(a, r(384, 256).t()) and listed(a.view(2, 256, 256), b)
    assert listed(a.half(), b.half(), r(384), "silu", r(512, 384, dtype=torch.float16))
    assert not listed(r(256, 512).t(), b)  # a M-major
    assert not listed(a[:mm.GLUON_MIN_M - 1], b)  # too few rows
    assert not listed(a.float(), b.float())  # IEEE fp32
    assert not listed(a, b, residual=r(512, 384, dtype=torch.float16))  # not the output's dtype
    assert not listed(a, b, residual=r(384, 512).t())  # column-major
    assert not listed(a, b, activation="gelu")  # spills
    monkeypatch.setattr(mm, "GLUON_ENABLED", False)
    assert not listed(a, b)


@needs_sm90
def test_gpu_gluon_plan_under_cuda_graph_capture(monkeypatch, gluon_launches):
    _choose_always(monkeypatch, matmul_sm90.VARIANTS[0].config())
    _replays_under_cuda_graph(gluon_launches, 2)  # both calls launch the Gluon kernel


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (8192, 28672, 4096), (2048, 57344, 8192)])
def test_gpu_large(shape):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = (torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K**0.5).t()
    residual = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    assert rel_err(matmul(a, b, residual=residual), matmul_reference(a, b, residual=residual)) < 1e-2


@pytest.mark.slow
def test_gpu_past_2_31_elements():
    """64-bit offsets: an output and an a of more than 2^31 elements."""
    M = 2**31 // 4096 + 129
    a = torch.randn(M, 64, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    residual = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16)
    out = matmul(a, b, residual=residual)
    tail = slice(M - 200, None)
    assert rel_err(out[tail], matmul_reference(a[tail], b, residual=residual[tail])) < TOL[torch.bfloat16]
    del out, residual
    a = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 64, device="cuda", dtype=torch.bfloat16)
    for view in (a, a.t().contiguous().t()):  # K-major and M-major a
        out = matmul(view, b)
        assert rel_err(out[tail], matmul_reference(view[tail], b)) < TOL[torch.bfloat16]


def test_gemm_roofline_turns_compute_bound_with_the_token_count():
    from rooftop.hardware import Ceilings
    from rooftop.ops.matmul import gemm_roofline

    c = Ceilings(device="H200", copy_GBps=4245.0, bf16_mm_TFLOPs=709.0, source="test", date="2026-11-29", torch="x")
    rows = gemm_roofline(c)
    for layer in {(r["model"], r["layer"]) for r in rows}:
        curve = sorted((r for r in rows if (r["model"], r["layer"]) == layer), key=lambda r: r["M"])
        assert curve[0]["bound"] == "memory" and curve[-1]["bound"] == "compute"  # decode vs prefill
        assert all(a["intensity"] < b["intensity"] for a, b in zip(curve, curve[1:]))
        # at M = 1 the weight dominates: about one FLOP per byte, far below the ridge
        assert 0.9 < curve[0]["intensity"] < 1.1 and curve[0]["attainable_TFLOPs"] < 5


@needs_sm90
@pytest.mark.parametrize("kernel", ["grouped", "tma", "gluon"])
def test_gpu_pdl_chain(kernel, monkeypatch):
    """Each kernel launched as a programmatic dependent (PDL_KERNELS), in a CUDA graph of a chain of GEMMs each reading
    the output of the one before, and a residual each: the plain launches' bits (a read of a or of the residual, or a
    write, before the kernel ahead ended would show), each step right against the reference. The Gluon variant is
    stream-K (tiles cut between programs: the partials and counters of one call must not meet the next's)."""
    K = 1024
    a = torch.randn(512, K, device="cuda", dtype=torch.bfloat16)
    weights = [torch.randn(K, K, device="cuda", dtype=torch.bfloat16) * K**-0.5 for _ in range(3)]
    residual = torch.randn(512, K, device="cuda", dtype=torch.bfloat16)
    asked = []
    monkeypatch.setattr(_autotune, "choose", lambda op, key, configs, *args, **kw: asked.append(configs) or configs[0])
    matmul(a, weights[0], residual=residual)
    if kernel == "gluon":
        config = next(c for c in asked[0] if c["KERNEL"] == "gluon" and c.get("STREAM_K"))
    else:
        config = next(c for c in asked[0] if c["KERNEL"] == kernel)
    _choose_always(monkeypatch, config)
    steps = weights * 3

    def chain(outs):
        outs[:] = [a]
        for w in steps:
            outs.append(matmul(outs[-1], w, residual=residual))

    def switch(on):
        monkeypatch.setattr(mm, "PDL_KERNELS", frozenset([kernel] * on))
        mm._plans.clear()

    results = replayed_by_switch(chain, switch)
    for step, w in enumerate(steps):
        assert torch.equal(results[True][step + 1], results[False][step + 1]), step
        ref = matmul_reference(results[True][step], w, residual=residual)
        assert rel_err(results[True][step + 1], ref) < TOL[torch.bfloat16], step


@pytest.mark.parametrize("b_k_major", [True, False])
def test_fp8_strided_scales(b_k_major):
    """Scales that are strided views (every 2nd / 3rd element): each read by its own stride."""
    M, N, K = 48, 64, 96
    a, b, _, _ = _fp8_inputs(M, N, K, b_k_major)
    sa = (torch.rand(2 * M, device=DEVICE) + 0.5)[::2]
    sb = (torch.rand(3 * N, device=DEVICE) + 0.5)[::3]
    assert sa.stride(0) == 2 and sb.stride(0) == 3
    out = matmul_fp8(a, b, sa, sb)
    assert rel_err(out, matmul_fp8_reference(a, b, sa, sb)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("path", ["tma", "grouped"])
def test_relu_propagates_nan(path, request):
    """relu(NaN) is NaN, as torch's."""
    if path == "grouped":
        request.getfixturevalue("grouped_only")
    a, b = _randn(40, 48), _randn(48, 64)
    a[3, 5] = float("nan")
    out = matmul(a, b, activation="relu")
    ref = matmul_reference(a, b, activation="relu")
    assert out[3].isnan().all()
    assert rel_err(out, ref) < TOL[torch.bfloat16]


def test_dispatch_needs_16_byte_row_strides(kernels):
    """Row strides TMA cannot take (97 / 49 bf16 elements) on aligned bases: the pointer kernel, right."""
    b = _randn(96, 48)
    for x, y in [(_randn(64, 97)[:, :96], b), (_randn(64, 96), _randn(96, 49)[:, :48])]:
        assert x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        out = matmul(x, y)
        assert kernels[-1] == "_matmul_grouped_kernel", (x.stride(), y.stride())
        assert rel_err(out, matmul_reference(x, y)) < TOL[torch.bfloat16]


def test_plan_follows_the_activation(plan_misses):
    """One shape under each activation: a plan of its own each."""
    a, b = _randn(40, 64), _randn(64, 48)
    for activation in (None, *ACTIVATIONS):
        out = matmul(a, b, activation=activation)
        assert rel_err(out, matmul_reference(a, b, activation=activation)) < TOL[torch.bfloat16], activation
    assert len(plan_misses) == 1 + len(ACTIVATIONS)


def test_tuning_key_separates_k_and_epilogue(monkeypatch):
    """The tuner keeps a choice per bucket of K and per epilogue."""
    keys = []
    real = _autotune.choose
    monkeypatch.setattr(_autotune, "choose", lambda op, key, configs, run, **kw: keys.append(key)
                        or real(op, key, configs, run, **kw))
    a, b = _randn(64, 32), _randn(32, 48)
    matmul(a, b)
    matmul(_randn(64, 256), _randn(256, 48))  # K in another bucket
    matmul(a, b, _randn(48), "silu")
    matmul(a, b, residual=_randn(64, 48))
    assert len(set(keys)) == 4, keys


def test_bucket_rounds_up_to_a_power_of_two():
    assert [_autotune.bucket(n) for n in (0, 1, 2, 3, 64, 65, 4096)] == [0, 1, 2, 4, 64, 128, 4096]


def test_choice_read_from_disk_is_settled(monkeypatch):
    """A choice another process remembered is settled once read (so its callers keep plans)."""
    monkeypatch.setattr(_autotune, "time_ms", lambda fn: (fn(), 1.0)[1])
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")
    key, configs = (64, torch.bfloat16), ({"B": 16}, {"B": 32})
    _autotune.choose("op", key, configs, lambda c: None, device="dev", tune=True)
    _autotune.forget()  # a new process: the file's entry
    assert not _autotune.is_settled("op", key, device="dev")
    _autotune.choose("op", key, configs, lambda c: None, device="dev", tune=False)
    assert _autotune.is_settled("op", key, device="dev")


@pytest.mark.parametrize("activation", [None, *ACTIVATIONS])
def test_tma_whole_tile_epilogue(activation, monkeypatch, kernels):
    """The TMA kernel's epilogue over the whole tile (EPILOGUE_SUBTILE False), which the interpreter's
    default configuration never takes."""
    monkeypatch.setattr(mm, "INTERPRETER_SUBTILE", False)
    mm._configs.cache_clear()
    try:
        M, N, K = 40, 64, 48
        a, b, bias = _randn(M, K), _randn(K, N), _randn(N)
        for residual in (_randn(M, N), _randn(M, 2 * N)[:, ::2]):  # by TMA, through pointers
            out = matmul(a, b, bias, activation, residual)
            assert kernels[-1] == "_matmul_tma_kernel"
            assert rel_err(out, matmul_reference(a, b, bias, activation, residual)) < TOL[torch.bfloat16]
    finally:
        mm._configs.cache_clear()


def test_bad_epilogue_and_fp8_input():
    a, b = _randn(4, 8), _randn(8, 16)
    with pytest.raises(ValueError, match="residual is on meta"):
        matmul(a, b, residual=torch.empty(4, 16, device="meta", dtype=a.dtype))
    a8, b8, sa, sb = _fp8_inputs(4, 16, 8)
    with pytest.raises(ValueError, match="matmul_fp8 takes 2-D"):
        matmul_fp8(a8, b8[None], sa, sb)
