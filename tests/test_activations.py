import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import rooftop
from conftest import DEVICE, HAS_CUDA, TOL, assert_quantized, rel_err, spy_launches
from rooftop.ops import _support, activations
from rooftop.ops.activations import (FLAT_BLOCK, ROWS_BLOCK_ELEMS, _activate, bias_gelu, bias_gelu_reference, geglu,
                                     geglu_reference, gated_reference, swiglu, swiglu_reference)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# 1 row, odd and prime widths, non-power-of-two, one flat block exactly and one element past it,
# a row wider than the row kernel's tile (two column tiles, the second one ragged)
SHAPES = [(1, 1), (3, 7), (5, 1000), (2, FLAT_BLOCK // 2), (1, FLAT_BLOCK + 1), (2, ROWS_BLOCK_ELEMS + 13)]


def _randn(shape, dtype, device, scale=3.0):
    return torch.randn(shape, device=device, dtype=dtype) * scale  # 3: reach both tails of the activations


GATED = [
    (swiglu, swiglu_reference, {}),
    (geglu, geglu_reference, {"approximate": "tanh"}),
    (geglu, geglu_reference, {"approximate": "none"}),
]
GATED_IDS = ["swiglu", "geglu_tanh", "geglu_erf"]


@pytest.mark.parametrize("fn, ref, kwargs", GATED, ids=GATED_IDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gated_separate(fn, ref, kwargs, shape, dtype, device):
    gate, up = _randn(shape, dtype, device), _randn(shape, dtype, device)
    out = fn(gate, up, **kwargs)
    assert out.dtype == dtype and out.shape == gate.shape
    # against the reference rounded to the output dtype, as the op rounds once: a lone far-tail value
    # (gelu(-7) * up ~ 1e-11) underflows to 0 in fp16, an error of 100% on a 1-element tensor otherwise
    assert rel_err(out, ref(gate, up, **kwargs).to(dtype)) < TOL[dtype]


@pytest.mark.parametrize("fn, ref, kwargs", GATED, ids=GATED_IDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 1000), (2, ROWS_BLOCK_ELEMS + 13)])
def test_gated_packed(fn, ref, kwargs, shape, dtype, device):
    M, inter = shape
    x = _randn((M, 2 * inter), dtype, device)
    out = fn(x, **kwargs)
    assert out.dtype == dtype and out.shape == (M, inter)
    assert rel_err(out, ref(x, **kwargs).to(dtype)) < TOL[dtype]  # rounded as the op rounds (above)
    gate, up = x.chunk(2, -1)  # the packed halves are gate and up (rounded like the op, as above)
    assert rel_err(out, ref(gate, up, **kwargs).to(dtype)) < TOL[dtype]


QUANTIZED = [(swiglu, "silu", {}), (geglu, "gelu_tanh", {"approximate": "tanh"}),
             (geglu, "gelu", {"approximate": "none"})]


def _same_codes(a, b) -> bool:
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


@pytest.mark.parametrize("fn, activation, kwargs", QUANTIZED, ids=GATED_IDS)
@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 1000), (2, 4099)])
def test_gated_quantized(fn, activation, kwargs, shape, dtype, quant, device):
    """Each row's y = act(gate) * up (fp32, not rounded to the input dtype) quantized by its own absmax scale;
    the packed [.., 2I] input gives the same codes and scales as its halves."""
    gate, up = _randn(shape, dtype, device), _randn(shape, dtype, device)
    q, scale = fn(gate, up, quant=quant, **kwargs)
    assert_quantized(q, scale, gated_reference(gate, up, activation), quant)
    q_packed, scale_packed = fn(torch.cat([gate, up], -1), quant=quant, **kwargs)
    assert _same_codes(q_packed, q) and torch.equal(scale_packed, scale)


@pytest.mark.parametrize("quant", ["fp8", "int8"])
def test_gated_quantized_rows_in_tiles(quant, device, monkeypatch):
    """Rows wider than QUANT_TILE: pass 1 takes the absmax over every tile (the largest |y| put in the last, ragged
    tile, then in the first), pass 2 reads the row again and stores each tile."""
    monkeypatch.setattr(activations, "QUANT_TILE", 64)
    monkeypatch.setattr(activations, "QUANT_LOOP_TILE", 64)
    parts = []
    real = activations.launch
    monkeypatch.setattr(activations, "launch", lambda kernel, *a, **k: parts.append(k.get("PARTS")) or
                        real(kernel, *a, **k))
    packed = _randn((2, 3, 2 * 200), torch.bfloat16, device)
    gate, up = packed[..., :200], packed[..., 200:]
    gate[0, 0, 199], gate[0, 1, 0] = 9.0, -9.0  # the extreme value in a ragged last tile / in the first one
    up[0, 0, 199], up[0, 1, 0] = 8.0, 8.0
    for strided in (False, True):  # the halves of a packed row (stride 400), or contiguous copies
        args = (packed,) if strided else (gate.contiguous(), up.contiguous())
        q, scale = swiglu(*args, quant=quant)
        assert_quantized(q, scale, gated_reference(gate, up, "silu"), quant)
    assert parts == [4, 4]


def test_gated_quantized_zero_row_and_leading_dims(device):
    gate = _randn((2, 3, 50), torch.float16, device)
    gate[1, 2] = 0.0  # silu(0) * up = 0: a row of zeros, its codes 0 and its scale tiny but finite
    up = _randn((2, 3, 50), torch.float16, device)
    q, scale = swiglu(gate, up, quant="int8")
    assert q.shape == (2, 3, 50) and scale.shape == (2, 3, 1)
    assert (q[1, 2] == 0).all() and 0 < scale[1, 2].item() < 1e-30
    q_rest, scale_rest = q.view(6, 50)[:5], scale.view(6, 1)[:5]
    assert_quantized(q_rest, scale_rest, gated_reference(gate, up, "silu").view(6, 50)[:5], "int8")
    assert swiglu(torch.randn(0, 64, device=device), quant="fp8")[0].shape == (0, 32)


@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 3, 1000), (2, 4099)])
def test_quantize_rows(shape, dtype, quant, device, monkeypatch):
    """quantize_rows(x) is x quantized by its rows' own absmax scales, for rows of one tile and, with the tiles
    narrowed, rows read twice; strided rows give the codes of their contiguous copy."""
    x = _randn(shape, dtype, device)
    q, scale = rooftop.quantize_rows(x, quant)
    assert_quantized(q, scale, x.double(), quant)
    padded = _randn((*shape[:-1], shape[-1] + 5), dtype, device)[..., 2:-3]
    padded[..., -1] = 20.0  # each row's largest |x| in its last column (a ragged last tile below)
    q_padded, scale_padded = rooftop.quantize_rows(padded, quant)
    monkeypatch.setattr(activations, "QUANT_TILE", 64)
    monkeypatch.setattr(activations, "QUANT_LOOP_TILE", 64)
    _support.clear_plans()  # (a call of the first one's signature would replay its one-tile launch)
    q_tiles, scale_tiles = rooftop.quantize_rows(padded.contiguous(), quant)
    assert _same_codes(q_tiles, q_padded) and torch.equal(scale_tiles, scale_padded)


@pytest.mark.parametrize("tile", [None, 64])
@pytest.mark.parametrize("quant", ["fp8", "int8"])
def test_quantized_rows_holding_nan(quant, tile, device, monkeypatch):
    """A row holding a NaN gets a NaN scale (torch.amax keeps NaN; the PyTorch path's result), so that it
    dequantizes to NaN, not to numbers; the other rows are quantized as usual. One tile and rows in tiles."""
    if tile:
        monkeypatch.setattr(activations, "QUANT_TILE", tile)
        monkeypatch.setattr(activations, "QUANT_LOOP_TILE", tile)
    gate, up = _randn((3, 200), torch.bfloat16, device), _randn((3, 200), torch.bfloat16, device)
    gate[1, 150] = float("nan")
    keep = torch.tensor([0, 2], device=device)
    for (q, scale), y in ((swiglu(gate, up, quant=quant), gated_reference(gate, up, "silu")),
                          (rooftop.quantize_rows(gate, quant), gate.double())):
        assert scale[1].isnan().all() and (q[1].double() * scale[1].double()).isnan().all()
        assert_quantized(q[keep], scale[keep], y[keep], quant)


@pytest.mark.parametrize("quant", ["fp8", "int8"])
def test_quantized_rows_split(quant, device, monkeypatch):
    """Wide rows over programs that exchange their chunk's max |y| (the split kernel; off a GPU rows of one chunk,
    on a GPU of two or four, the last ragged): the codes and scales of the kernel that reads rows twice, a NaN row's
    scale NaN, twice (each launch leaves the exchange's counters at zero)."""
    gate, up = _randn((5, 200), torch.bfloat16, device), _randn((5, 200), torch.bfloat16, device)
    gate[0, 199], up[0, 199] = 9.0, 8.0  # a row's extreme value in its last chunk
    gate[3, 120] = float("nan")
    calls = {"swiglu": lambda *args: swiglu(*args, quant=quant),
             "quantize_rows": lambda x: rooftop.quantize_rows(x, quant)}
    monkeypatch.setattr(activations, "QUANT_TILE", 64)
    monkeypatch.setattr(activations, "QUANT_LOOP_TILE", 64)
    looped = {name: call(gate, up) if name == "swiglu" else call(gate) for name, call in calls.items()}
    monkeypatch.setattr(activations, "QUANT_SPLIT_MIN_N", 64)
    monkeypatch.setattr(activations, "QUANT_ROWS_SPLIT_MIN_N", 64)
    monkeypatch.setattr(activations, "QUANT_SPLIT_BYTES", 256 if HAS_CUDA else 1024)  # 64 / 256 columns of swiglu
    monkeypatch.setattr(activations, "QUANT_SPLIT_MAX_CHUNKS", 4)
    launched = spy_launches(monkeypatch, activations)
    keep = torch.tensor([0, 1, 2, 4], device=device)
    for _ in range(2):
        for name, call in calls.items():
            q, scale = call(gate, up) if name == "swiglu" else call(gate)
            assert _same_codes(q[keep], looped[name][0][keep]) and torch.equal(scale[keep], looped[name][1][keep])
            assert scale[3].isnan().all() and looped[name][1][3].isnan().all()
        if HAS_CUDA:
            torch.cuda.synchronize()
            assert int(_support.arrival_counters(gate.device, 5).count_nonzero()) == 0
    assert launched == ["_gated_quant_split_kernel"] * 4


def test_quant_split_chunk():
    """16 KB of input a program (swiglu's bf16 pair: 4096 columns; quantize_rows': 8192), at most 32 chunks a row
    (the H200's best in session 59's sweep)."""
    assert activations.quant_split_chunk(32768, 4) == 4096 and activations.quant_split_chunk(131072, 4) == 4096
    assert activations.quant_split_chunk(262144, 4) == 8192 and activations.quant_split_chunk(65536, 2) == 8192
    assert activations.quant_split_chunk(1 << 20, 2) == 32768 and activations.quant_split_chunk(100, 8) == 2048


@pytest.mark.gpu
@pytest.mark.parametrize("quant", ["fp8", "int8"])
def test_quantized_split_many_rows(quant):
    """More rows than SMs, each of 17 chunks (the last ragged), a NaN row among them, twice: the real sizes of the
    split path against the float64 reference."""
    rows, N = 2 * torch.cuda.get_device_properties(0).multi_processor_count + 5, 65536 + 1000
    packed = _randn((rows, 2 * N), torch.bfloat16, "cuda")
    packed[7, 5] = float("nan")
    keep = torch.arange(rows, device="cuda") != 7
    y = swiglu_reference(packed[keep])
    for _ in range(2):
        q, scale = swiglu(packed, quant=quant)
        assert scale[7].isnan().all()
        assert_quantized(q[keep], scale[keep], y, quant)
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(packed.device, rows).count_nonzero()) == 0


def test_quantized_rows_feed_the_fp8_gemm(device):
    """swiglu(quant="fp8")'s (q, scale) are matmul_fp8's a and per-row a_scale as they come (an fp8 MLP's down
    projection): the product matches the unquantized one to fp8's precision (both operands in e4m3: ~5% RMS)."""
    from rooftop.ops.matmul import matmul_fp8
    M, inter, N = 24, 256, 48
    gate_up = _randn((M, 2 * inter), torch.bfloat16, device, scale=1.0)
    weight = torch.randn(N, inter, device=device)
    w_scale = weight.abs().amax(1) / 448.0
    q, scale = swiglu(gate_up, quant="fp8")
    out = matmul_fp8(q, (weight / w_scale[:, None]).to(torch.float8_e4m3fn).t(), scale, w_scale)
    assert out.dtype == torch.bfloat16 and out.shape == (M, N)
    assert rel_err(out, swiglu_reference(gate_up) @ weight.double().t()) < 0.1


@pytest.mark.parametrize("name, inputs_per_element", [("swiglu_packed_fp8", 2), ("quantize_rows_fp8", 1)])
def test_registry_quantized(name, inputs_per_element, device):
    """The quantized epilogues in the benchmark registry: the bytes of their inputs, a 1-byte output and a scale a
    row; rooftop, eager and the reference agree on the dequantized rows to fp8's precision."""
    from rooftop import registry
    spec = registry.get(name)
    assert spec.family == "activations" and spec.cases == registry.row_sweep()
    M, N = 512, 4096
    assert spec.cost((M, N), torch.bfloat16).bytes == inputs_per_element * M * N * 2 + M * N + 4 * M
    inputs = spec.make_inputs((3, 256), torch.bfloat16, device)
    ref_q, ref_scale = spec.reference(*inputs)
    for out in (spec.run(*inputs), spec.eager(*inputs)):
        assert rel_err(out[0].double() * out[1].double(), ref_q * ref_scale) < 0.07  # e4m3: 3 mantissa bits


def test_matches_torch_activations(device):
    """The kernels' formulas (exp2 sigmoid, tanh via sigmoid, erf) against torch's own, fp32."""
    gate, up = _randn((4, 999), torch.float32, device), _randn((4, 999), torch.float32, device)
    assert rel_err(swiglu(gate, up), F.silu(gate) * up) < 1e-5
    assert rel_err(geglu(gate, up), F.gelu(gate, approximate="tanh") * up) < 1e-5
    assert rel_err(geglu(gate, up, "none"), F.gelu(gate) * up) < 1e-5
    bias = _randn(999, torch.float32, device)
    assert rel_err(bias_gelu(gate, bias, "tanh"), F.gelu(gate + bias, approximate="tanh")) < 1e-5


def test_extreme_values(device):
    """Saturation: no inf/NaN from exp2 overflow at large |x|; silu/gelu(-big) -> 0, (+big) -> x."""
    gate = torch.tensor([-1e4, -200.0, -90.0, -20.0, 0.0, 20.0, 90.0, 200.0, 1e4, 3e38, -3e38], device=device)
    up = torch.ones_like(gate)
    for out, ref in [(swiglu(gate, up), swiglu_reference(gate, up)),
                     (geglu(gate, up), geglu_reference(gate, up)),
                     (geglu(gate, up, "none"), geglu_reference(gate, up, "none"))]:
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, ref.float(), rtol=1e-5, atol=1e-6)


def test_gelu_at_infinities(device):
    """The erf GELU at +-inf and NaN: inf as torch's CUDA kernel, 0 (the limit) at -inf, NaN stays NaN."""
    x = torch.tensor([float("inf"), -float("inf"), float("nan"), 1.0], device=device)
    for dtype in (torch.float32, torch.bfloat16):
        out = bias_gelu(x.to(dtype), torch.zeros(4, device=device, dtype=dtype)).float()
        assert out[0] == float("inf") and out[1] == 0 and out[2].isnan() and abs(out[3] - 0.8413) < 1e-2


def test_gelu_negative_tail_keeps_its_digits(device):
    """Exact gelu in fp32 from erfc: element-wise relative error stays small where x/2 (1 + erf(x/sqrt 2))
    cancels (1e-4 relative at x = -3, all digits lost by x = -6)."""
    x = torch.linspace(-10.0, 10.0, 2001, device=device)
    ref = bias_gelu_reference(x, torch.zeros(1, device=device))
    out = bias_gelu(x, torch.zeros(1, device=device).expand(2001).contiguous())
    assert ((out.double() - ref).abs() <= 2e-5 * ref.abs()).all()
    gate = x.reshape(1, -1)
    assert ((geglu(gate, torch.ones_like(gate), "none").double() - ref).abs() <= 2e-5 * ref.abs()).all()


@triton.jit
def _gelu_kernel(x_ptr, out_ptr, n, TO_BF16: tl.constexpr, APPROX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _activate(tl.load(x_ptr + offs, mask=mask), "gelu", APPROX, TO_BF16), mask=mask)


@pytest.mark.parametrize("to_bf16, bound", [(True, 2e-6), (False, 8e-7)])
def test_gelu_erf_approximation(to_bf16, bound, device):
    """The erf GELU in fp32, before any rounding to the output dtype, against float64 on a dense grid of
    inputs to |x| = 14 (past it |gelu| < 2^-126, flushed), tiny ones and huge ones: relative error at
    most `bound` (the polynomial's 1.1e-6 for bf16 outputs, 4e-8 for the others, plus fp32's rounding
    and, on a GPU, rcp.approx / ex2.approx) + x^2 2^-22 (fp32's rounding of the exponent x^2 log2(e)/2,
    as large as what rounding x to fp32 alone does to the result). A polynomial of one degree less, or
    the bf16 one for fp16 / fp32 outputs, fails. Results under 2^-124 in magnitude only within 2^-124: a GPU
    flushes the subnormal 2^(..) of v 2^(..) (v < 4) to 0."""
    x = torch.cat([torch.linspace(-14.0, 14.0, 1_000_001), torch.logspace(-30, 1.15, 20_001),
                   -torch.logspace(-30, 1.15, 20_001), torch.tensor([-3e38, -1e4, -20.0, 20.0, 1e4, 3e38])]).to(device)
    out = torch.full_like(x, float("nan"))
    _gelu_kernel[(triton.cdiv(x.numel(), 4096),)](x, out, x.numel(), TO_BF16=to_bf16, APPROX=x.is_cuda, BLOCK=4096)
    xd = x.double()
    ref = bias_gelu_reference(xd, torch.zeros(1, dtype=torch.float64, device=device))
    err = (out.double() - ref).abs()
    normal = ref.abs() >= 2.0**-124
    assert (err[normal] <= (bound + xd[normal] ** 2 * 2.0**-22) * ref[normal].abs()).all()
    assert (err[~normal] <= 2.0**-124).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bias_gelu_rounds_as_exact_gelu(dtype, device):
    """Every finite 16-bit input with 2^-100 <= |x| <= 14 through bias_gelu (bias 0): the result is exact
    gelu correctly rounded to the dtype, up to one ulp on a few (none in the interpreter; rcp.approx and
    ex2.approx on a GPU may move a near-tie); results under 2^-124 in magnitude (bf16's range, x < -13.1)
    only within 2^-124 (a GPU flushes subnormal intermediates)."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    x = every[torch.isfinite(every) & (every.float().abs() <= 14) & (every.float().abs() >= 2.0**-100)]
    x = x.reshape(1, -1).to(device)
    zero = torch.zeros(x.shape[-1], dtype=dtype, device=device)
    out, exact = bias_gelu(x, zero), bias_gelu_reference(x, zero)
    tiny = exact.abs() < 2.0**-124
    ulps = (out.view(torch.int16).int() - exact.to(dtype).view(torch.int16).int())[~tiny]
    assert ulps.abs().max() <= 1 and (ulps != 0).float().mean() <= 2e-3
    assert (out[tiny].float().abs() <= 2.0**-124).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 1000), (2, ROWS_BLOCK_ELEMS + 13)])
def test_bias_gelu(shape, approximate, dtype, device):
    # x + bias ~ N(0, 2): a lone element deep in the negative tail (gelu ~ 1e-15) is not the point here
    x, bias = _randn(shape, dtype, device, 1.0), _randn(shape[-1], dtype, device, 1.0)
    out = bias_gelu(x, bias, approximate)
    assert out.dtype == dtype and out.shape == x.shape
    assert rel_err(out, bias_gelu_reference(x, bias, approximate).to(dtype)) < TOL[dtype]  # rounded as the op


def test_bias_gelu_fp32_bias_and_leading_dims(device):
    x = _randn((2, 3, 100), torch.bfloat16, device)
    bias = _randn(100, torch.float32, device)
    out = bias_gelu(x, bias)
    assert out.shape == x.shape and out.dtype == torch.bfloat16
    assert rel_err(out, bias_gelu_reference(x, bias)) < TOL[torch.bfloat16]


def test_leading_dims_and_non_contiguous_rows(device):
    # rows of 1000 with stride 1100 and an unaligned start; up with another stride (row path)
    gate = _randn((2, 3, 1100), torch.float16, device)[..., 50:1050]
    up = _randn((2, 3, 1200), torch.float16, device)[..., 1:1001]
    out = swiglu(gate, up)
    assert out.shape == (2, 3, 1000) and out.is_contiguous()
    assert rel_err(out, swiglu_reference(gate, up)) < TOL[torch.float16]
    # a transposed gate: rows cannot be viewed with unit column stride
    gate_t = _randn((40, 6), torch.float16, device).t()
    up_t = _randn((6, 40), torch.float16, device)
    assert rel_err(geglu(gate_t, up_t), geglu_reference(gate_t, up_t)) < TOL[torch.float16]
    # a packed input that is itself a strided view, with leading dims
    packed = _randn((2, 5, 300), torch.bfloat16, device)[..., 20:220]
    out = swiglu(packed)
    assert out.shape == (2, 5, 100)
    assert rel_err(out, swiglu_reference(packed)) < TOL[torch.bfloat16]
    x = _randn((4, 130), torch.float32, device)[:, 1:129]
    bias = _randn(128, torch.float32, device)
    assert rel_err(bias_gelu(x, bias), bias_gelu_reference(x, bias)) < TOL[torch.float32]


def test_1d_input(device):
    gate, up = _randn(77, torch.float32, device), _randn(77, torch.float32, device)
    assert rel_err(swiglu(gate, up), swiglu_reference(gate, up)) < TOL[torch.float32]
    packed = _randn(78, torch.float32, device)
    out = swiglu(packed)
    assert out.shape == (39,) and rel_err(out, swiglu_reference(packed)) < TOL[torch.float32]


def test_empty(device):
    gate = torch.randn(0, 64, device=device)
    assert swiglu(gate, gate.clone()).shape == (0, 64)
    assert geglu(gate).shape == (0, 32)
    assert swiglu(torch.randn(3, 0, device=device)).shape == (3, 0)
    assert bias_gelu(gate, torch.randn(64, device=device)).shape == (0, 64)


def test_bad_input(device):
    x = torch.randn(4, 64, device=device)
    with pytest.raises(TypeError, match="gate has dtype int64"):
        swiglu(torch.ones(4, 64, dtype=torch.int64, device=device), x)
    with pytest.raises(TypeError, match="up has dtype float16 but gate has float32"):
        swiglu(x, x.half())
    with pytest.raises(ValueError, match=r"up has shape \(4, 32\)"):
        geglu(x, torch.randn(4, 32, device=device))
    with pytest.raises(ValueError, match="up is on meta"):
        swiglu(x, torch.randn(4, 64, device="meta"))
    with pytest.raises(ValueError, match="gate's last dim \\(7\\) must be even"):
        swiglu(torch.randn(4, 7, device=device))
    with pytest.raises(ValueError, match="gate must have at least one dimension"):
        swiglu(torch.tensor(1.0, device=device))
    with pytest.raises(ValueError, match="approximate"):
        geglu(x, x, approximate="erf")
    with pytest.raises(TypeError, match="x has dtype"):
        bias_gelu(x.to(torch.float64), torch.randn(64, device=device))
    with pytest.raises(ValueError, match=r"bias must have shape \(64,\)"):
        bias_gelu(x, torch.randn(32, device=device))
    with pytest.raises(ValueError, match="bias must be contiguous"):
        bias_gelu(x, torch.randn(128, device=device)[::2])
    with pytest.raises(ValueError, match="bias is on meta"):
        bias_gelu(x, torch.randn(64, device="meta"))
    with pytest.raises(RuntimeError, match="gate requires grad"):
        swiglu(torch.randn(4, 64, device=device, requires_grad=True))
    with pytest.raises(ValueError, match="quant must be None, 'fp8' or 'int8', got 'int4'"):
        swiglu(x, x, quant="int4")
    with pytest.raises(ValueError, match="quant needs rows to scale"):
        geglu(torch.randn(4, 0, device=device), quant="int8")
    with pytest.raises(ValueError, match="quant needs rows to scale: x's last dim is 0"):
        rooftop.quantize_rows(torch.randn(4, 0, device=device))
    with pytest.raises(ValueError, match="quant must be 'fp8' or 'int8', got None"):
        rooftop.quantize_rows(x, None)
    with pytest.raises(TypeError, match="x has dtype int64"):
        rooftop.quantize_rows(torch.ones(4, 64, dtype=torch.int64, device=device))


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    def mlp_act(h, gate, up, x, bias):
        return swiglu(h) + geglu(gate, up) * 0.5, bias_gelu(x, bias) * 2.0, swiglu(h, quant="int8")

    h = torch.randn(3, 2, 128, device=DEVICE, dtype=torch.float16)
    gate, up = torch.randn(3, 2, 64, device=DEVICE, dtype=torch.float16), torch.randn(3, 2, 64, device=DEVICE,
                                                                                    dtype=torch.float16)
    x, bias = torch.randn(5, 96, device=DEVICE, dtype=torch.float16), torch.randn(96, device=DEVICE,
                                                                                  dtype=torch.float16)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    act, gelu_out, quantized = torch.compile(mlp_act, backend=counter, fullgraph=True)(h, gate, up, x, bias)
    assert counter.frame_count == 1
    ref = swiglu_reference(h).half().double() + geglu_reference(gate, up).half().double() * 0.5
    assert act.shape == (3, 2, 64) and rel_err(act, ref) < 5e-3
    assert rel_err(gelu_out, bias_gelu_reference(x, bias) * 2.0) < TOL[torch.float16]
    assert_quantized(*quantized, swiglu_reference(h), "int8")


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(16384, 8192), (2048, 65536), (64, 1 << 20), (1, 262144), (4096, 14336)])
def test_gpu_sizes(shape):
    gate, up = _randn(shape, torch.bfloat16, "cuda"), _randn(shape, torch.bfloat16, "cuda")
    assert rel_err(swiglu(gate, up), swiglu_reference(gate, up)) < TOL[torch.bfloat16]
    packed = torch.cat([gate, up], -1)
    assert rel_err(swiglu(packed), swiglu_reference(packed)) < TOL[torch.bfloat16]
    assert rel_err(geglu(gate, up), geglu_reference(gate, up)) < TOL[torch.bfloat16]
    bias = _randn(shape[-1], torch.bfloat16, "cuda")
    assert rel_err(bias_gelu(gate, bias), bias_gelu_reference(gate, bias)) < TOL[torch.bfloat16]
    rows = slice(0, 64)  # the quantized forms (rows of one tile and in tiles) on a few rows: float64 references
    for quant in ("fp8", "int8"):
        assert_quantized(*swiglu(packed[rows], quant=quant), swiglu_reference(packed[rows]), quant)
        assert_quantized(*rooftop.quantize_rows(packed[rows], quant), packed[rows].double(), quant)
        assert_quantized(*geglu(gate[rows], up[rows], "none", quant=quant),
                         gated_reference(gate[rows], up[rows], "gelu"), quant)


@pytest.mark.slow
def test_past_2_31_elements():
    shape = (2**31 // 8192 + 3, 8192)
    gate, up = _randn(shape, torch.bfloat16, "cuda"), _randn(shape, torch.bfloat16, "cuda")
    tail = slice(shape[0] - 4, None)
    out = swiglu(gate, up)  # flat kernel
    assert rel_err(out[tail], swiglu_reference(gate[tail], up[tail])) < TOL[torch.bfloat16]
    del out
    bias = _randn(8192, torch.bfloat16, "cuda")
    out = bias_gelu(gate, bias)  # row kernel
    assert rel_err(out[tail], bias_gelu_reference(gate[tail], bias)) < TOL[torch.bfloat16]
    del out
    packed = torch.cat([gate[: shape[0] // 2 + 2], up[: shape[0] // 2 + 2]], -1)  # [M/2, 16384]: > 2^31
    del gate, up
    half_tail = slice(packed.shape[0] - 4, None)
    assert rel_err(swiglu(packed)[half_tail], swiglu_reference(packed[half_tail])) < TOL[torch.bfloat16]
