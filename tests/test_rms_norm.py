import numpy as np
import pytest
import torch

import rooftop
from rooftop.ops import _support, rms_norm as rms_norm_mod
from rooftop.ops.rms_norm import add_rms_norm_reference, quantize_rows_reference, rms_norm_reference
from conftest import TOL, norm_gluon_rows, rel_err, rows_in_parts, run_norm_gluon, skip_unless_sm90, spy_launches

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# 1, odd, prime, non-power-of-two, the widest on-chip row (32768), the looped path, 262144
SHAPES = [(1, 1), (3, 7), (5, 1000), (4, 4096), (2, 32768), (3, 32771), (2, 262144)]


def _inputs(shape, dtype, device, w_dtype=None):
    x = torch.randn(shape, device=device, dtype=dtype)
    res = torch.randn(shape, device=device, dtype=dtype)
    w = torch.rand(shape[-1], device=device, dtype=w_dtype or dtype) + 0.5
    return x, res, w


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_rms_norm_matches_reference(shape, dtype, device):
    x, res, w = _inputs(shape, dtype, device)
    y, r = rooftop.rms_norm(x, w, 1e-6, residual=res)
    y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6)
    assert y.dtype == r.dtype == dtype and y.shape == r.shape == x.shape
    assert rel_err(y, y_ref) < TOL[dtype]
    assert rel_err(r, r_ref) < TOL[dtype]
    # the new residual is x + residual rounded once to the input dtype
    assert torch.equal(r, (x.float() + res.float()).to(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm_matches_reference(shape, dtype, device):
    x, _, w = _inputs(shape, dtype, device)
    y = rooftop.rms_norm(x, w, 1e-5)
    assert rel_err(y, rms_norm_reference(x, w, 1e-5)) < TOL[dtype]


@pytest.mark.parametrize("shape", [(4, 4096), (3, 40000)])
def test_fp32_weight_and_no_weight(shape, device):
    x, res, w = _inputs(shape, torch.bfloat16, device, w_dtype=torch.float32)
    y, _ = rooftop.rms_norm(x, w, residual=res)
    assert y.dtype == torch.bfloat16
    assert rel_err(y, add_rms_norm_reference(x, res, w)[0]) < TOL[torch.bfloat16]
    assert rel_err(rooftop.rms_norm(x, None), rms_norm_reference(x, None)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("shape", [(1, 4096), (8, 8192), (5, 1000), (3, 40000)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_add_rms_norm_in_place(shape, dtype, device):
    x, res, w = _inputs(shape, dtype, device)
    y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6)
    x_ptr, res_ptr = x.data_ptr(), res.data_ptr()
    assert rooftop.fused_add_rms_norm_(x, res, w, 1e-6) is None
    assert x.data_ptr() == x_ptr and res.data_ptr() == res_ptr
    assert rel_err(x, y_ref) < TOL[dtype]
    assert rel_err(res, r_ref) < TOL[dtype]


@pytest.mark.parametrize("width", [1000, 41000, 262150])  # on-chip, reload, looped
def test_leading_dims_and_non_contiguous_rows(width, device):
    big = torch.randn(2, 3, width + 100, device=device, dtype=torch.float16)
    x = big[..., 50:width + 50]  # row stride != width, unaligned start
    res = torch.randn(2, 3, width + 8, device=device, dtype=torch.float16)[..., 8:]  # a third row stride
    w = torch.rand(width, device=device, dtype=torch.float16)
    y, r = rooftop.rms_norm(x, w, residual=res)
    y_ref, r_ref = add_rms_norm_reference(x, res, w)
    assert y.shape == (2, 3, width)
    assert rel_err(y, y_ref) < TOL[torch.float16] and torch.equal(r, r_ref.to(torch.float16))


def test_empty(device):
    x = torch.randn(0, 64, device=device)
    w = torch.ones(64, device=device)
    assert rooftop.rms_norm(x, w).shape == (0, 64)
    y, r = rooftop.rms_norm(x, w, residual=x.clone())
    assert y.shape == r.shape == (0, 64)
    q, scale = rooftop.rms_norm(x, w, quant="fp8")
    assert q.shape == (0, 64) and scale.shape == (0, 1)
    for quant in ("fp8", "int8"):  # no row has an absmax to scale by: not a scale of whatever memory held
        with pytest.raises(ValueError, match="x has an empty last dim"):
            rooftop.rms_norm(torch.randn(3, 0, device=device), None, quant=quant)
        with pytest.raises(ValueError, match="x has an empty last dim"):
            rooftop.rms_norm(torch.randn(3, 0, device=device), None, residual=torch.randn(3, 0, device=device),
                             quant=quant)


def test_bad_input(device):
    x = torch.randn(4, 64, device=device)
    w = torch.ones(64, device=device)
    with pytest.raises(TypeError, match="x has dtype int64"):
        rooftop.rms_norm(torch.ones(4, 64, dtype=torch.int64, device=device), w)
    with pytest.raises(ValueError, match=r"weight must have shape \(64,\)"):
        rooftop.rms_norm(x, torch.ones(32, device=device))
    with pytest.raises(ValueError, match="residual has shape"):
        rooftop.rms_norm(x, w, residual=torch.randn(4, 32, device=device))
    with pytest.raises(TypeError, match="residual has dtype"):
        rooftop.rms_norm(x, w, residual=x.half())
    with pytest.raises(ValueError, match="weight is on meta"):
        rooftop.rms_norm(x, torch.ones(64, device="meta"))
    with pytest.raises(ValueError, match="eps"):
        rooftop.rms_norm(x, w, eps=-1.0)
    with pytest.raises(TypeError, match=r"eps must be a Python float or int, got numpy.float32"):
        rooftop.rms_norm(x, w, eps=np.float32(1e-6))
    with pytest.raises(TypeError, match=r"offset must be a Python float or int, got torch.Tensor"):
        rooftop.rms_norm(x, w, offset=torch.tensor(1.0))
    with pytest.raises(ValueError, match="residual is required"):
        rooftop.fused_add_rms_norm_(x, None, w)
    with pytest.raises(ValueError, match=r"weight must have shape \(64,\)"):
        rooftop.fused_add_rms_norm_(x, torch.randn_like(x), torch.ones(32, device=device))
    with pytest.raises(TypeError, match="eps must be a Python float or int, got builtins.bool"):
        rooftop.rms_norm(x, w, eps=True)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(16384, 8192), (2048, 65536), (64, 1 << 20), (1, 262144)])
def test_gpu_sizes(shape):
    x, res, w = _inputs(shape, torch.bfloat16, "cuda")
    y, r = rooftop.rms_norm(x, w, residual=res)
    y_ref, r_ref = add_rms_norm_reference(x, res, w)
    assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(r, r_ref) < TOL[torch.bfloat16]


@pytest.mark.slow
def test_past_2_31_elements():
    x, res, w = _inputs((2**31 // 8192 + 3, 8192), torch.bfloat16, "cuda")
    y, r = rooftop.rms_norm(x, w, residual=res)
    tail = slice(x.shape[0] - 4, None)
    y_ref, r_ref = add_rms_norm_reference(x[tail], res[tail], w)
    assert rel_err(y[tail], y_ref) < TOL[torch.bfloat16] and rel_err(r[tail], r_ref) < TOL[torch.bfloat16]


@pytest.mark.parametrize("shape", [(3, 7), (4, 4096), (3, 40000), (2, 262144)])  # on-chip, reload, looped paths
def test_gemma_offset_and_out_dtype(shape, device):
    x, res, w = _inputs(shape, torch.bfloat16, device)
    w = w - 1.0  # Gemma stores weight - 1
    y, r = rooftop.rms_norm(x, w, 1e-6, residual=res, offset=1.0, out_dtype=torch.float32)
    y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6, offset=1.0)
    assert y.dtype == torch.float32 and r.dtype == torch.bfloat16
    # fp32 output: only the bf16 rounding of r remains
    assert rel_err(y, rms_norm_reference(r, w, 1e-6, offset=1.0)) < 1e-5
    assert rel_err(y, y_ref) < TOL[torch.bfloat16]
    y2 = rooftop.rms_norm(x, w, 1e-6, offset=1.0)
    assert rel_err(y2, rms_norm_reference(x, w, 1e-6, offset=1.0)) < TOL[torch.bfloat16]
    x2, res2 = x.clone(), res.clone()
    rooftop.fused_add_rms_norm_(x2, res2, w, 1e-6, offset=1.0)
    assert rel_err(x2, y_ref) < TOL[torch.bfloat16]


@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 1000), (2, 32768), (3, 40000), (2, 49152)])
@pytest.mark.parametrize("with_residual", [False, True])
def test_quantized_output(shape, quant, with_residual, device):
    x, res, w = _inputs(shape, torch.bfloat16, device)
    if with_residual:
        q, scale, r = rooftop.rms_norm(x, w, residual=res, quant=quant)
        assert torch.equal(r, (x.float() + res.float()).bfloat16())
        y_ref = rms_norm_reference(r, w)  # y normalises the stored (rounded) residual
    else:
        q, scale = rooftop.rms_norm(x, w, quant=quant)
        y_ref = rms_norm_reference(x, w)
    _assert_quantized(q, scale, y_ref, quant)


@pytest.mark.parametrize("N", [1000, 40000, 262144])  # on-chip, reload, looped
def test_eps_on_every_path(N, device):
    """Rows of zeros normalise to zeros (0 / sqrt(0 + eps)), and rows whose mean square is eps's size match the
    reference: eps is where the reference has it, on every path."""
    _, res, w = _inputs((2, N), torch.bfloat16, device)
    zeros = torch.zeros(2, N, device=device, dtype=torch.bfloat16)
    assert torch.equal(rooftop.rms_norm(zeros, w), zeros)
    tiny = torch.randn(2, N, device=device, dtype=torch.bfloat16) * 1e-3  # mean square ~1e-6
    assert rel_err(rooftop.rms_norm(tiny, w, 1e-5), rms_norm_reference(tiny, w, 1e-5)) < TOL[torch.bfloat16]
    y, _ = rooftop.rms_norm(tiny, w, 1e-5, residual=res * 1e-3)
    assert rel_err(y, add_rms_norm_reference(tiny, res * 1e-3, w, 1e-5)[0]) < TOL[torch.bfloat16]


@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("shape", [(5, 1000), (3, 40000)])
def test_quantized_output_with_offset(shape, quant, device):
    """Gemma's (1 + weight) scales the row before its absolute maximum is taken: the quantized rows and scales are
    those of the offset output."""
    x, _, w = _inputs(shape, torch.bfloat16, device)
    q, scale = rooftop.rms_norm(x, w - 1.0, quant=quant, offset=1.0)
    _assert_quantized(q, scale, rms_norm_reference(x, w - 1.0, offset=1.0), quant)


@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("N", [1000, 40000])
def test_quantized_zero_row_and_symmetry(N, quant, device):
    """A row of zeros gets a finite positive scale and zero codes; -x quantizes to exactly -q(x) (int8 rounds half
    away from zero, as fp8's rounding to nearest even is symmetric too)."""
    x, _, w = _inputs((3, N), torch.bfloat16, device)
    x[1] = 0
    q, scale = rooftop.rms_norm(x, w, quant=quant)
    assert torch.isfinite(scale).all() and (scale > 0).all() and not q[1].float().any()
    q_neg, scale_neg = rooftop.rms_norm(-x, w, quant=quant)
    assert torch.equal(scale_neg, scale) and torch.equal(q_neg.float(), -q.float())


def _assert_quantized(q, scale, y_ref, quant):
    """q, scale: y_ref (float64) quantized per row as quantize_rows_reference does, up to rounding."""
    from rooftop.ops.rms_norm import QUANT_FORMATS

    dtype = QUANT_FORMATS[quant][0]
    qmax = float(torch.finfo(dtype).max if dtype.is_floating_point else torch.iinfo(dtype).max)  # not the table's
    assert q.dtype == dtype and q.shape == y_ref.shape
    assert scale.dtype == torch.float32 and scale.shape == (*y_ref.shape[:-1], 1)
    q_ref, scale_ref = quantize_rows_reference(y_ref, quant)
    assert rel_err(scale, scale_ref) < 1e-5
    # every row uses its full range, and dequantizing gives y back to the format's precision
    assert torch.allclose(q.float().abs().amax(-1), torch.full(y_ref.shape[:-1], qmax, device=q.device))
    # dequantized, each element is within the format's rounding of y: half a step for int8; half an
    # ulp of a 3-bit mantissa (1/16 of |y|) for fp8, with e4m3's subnormal step (2^-9) near zero
    err = (q.double() * scale.double() - y_ref).abs()
    if quant == "int8":
        assert (err <= 0.5 * scale.double() * (1 + 1e-4) + 1e-6 * y_ref.abs()).all()
    else:
        assert (err <= y_ref.abs() / 16 * (1 + 1e-4) + scale.double() * 2.0**-10).all()
    if quant == "int8":  # the same integers as the reference but where y / s sits within fp32's error of a tie
        # (y / s = 127 x / max|x| without a weight: bf16 rows tie exactly at ~0.5% of their elements)
        exact = (y_ref / scale_ref).abs()
        near_tie = (exact - exact.floor() - 0.5).abs() < 1e-3
        assert (q.int() - q_ref.int()).abs().max() <= 1
        assert (q.int() == q_ref.int())[~near_tie].all()
    else:
        assert (q.float() - q_ref.float()).abs().div(q_ref.float().abs().clamp_min(1)).max() <= 0.125


def test_variant_bad_input(device):
    x = torch.randn(4, 64, device=device)
    w = torch.ones(64, device=device)
    with pytest.raises(ValueError, match="quant must be"):
        rooftop.rms_norm(x, w, quant="int4")
    with pytest.raises(TypeError, match="out_dtype must be"):
        rooftop.rms_norm(x, w, out_dtype=torch.int8)
    with pytest.raises(ValueError, match="offset .* needs a weight"):
        rooftop.rms_norm(x, None, offset=1.0)
    with pytest.raises(ValueError, match="exclude each other"):
        rooftop.rms_norm(x, w, quant="fp8", out_dtype=torch.float16)
    for offset in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match="offset must be a finite number"):
            rooftop.rms_norm(x, w, offset=offset)


def test_variants_compile_without_graph_break(device):
    from torch._dynamo.testing import CompileCounterWithBackend

    from conftest import HAS_CUDA

    x, res, w = _inputs((4, 256), torch.bfloat16, device)

    def block(x, res, w):
        q, scale, r = rooftop.rms_norm(x, w, residual=res, quant="int8")
        y = rooftop.rms_norm(r, w, offset=1.0, out_dtype=torch.float32)
        return q, scale, y

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    q, scale, y = torch.compile(block, backend=counter, fullgraph=True)(x, res, w)
    assert counter.frame_count == 1
    r = (x.float() + res.float()).bfloat16()
    assert y.dtype == torch.float32 and rel_err(y, rms_norm_reference(r, w, offset=1.0)) < 1e-5
    # the quantized rows to the format's rounding (a norm-wise 1e-2 failed on the H200 at 1.0017e-2: half an int8
    # step against a row's RMS is ~0.7% for 256 values of randn, more for rows with a larger max)
    _assert_quantized(q, scale, rms_norm_reference(r, w), "int8")


def test_in_place_needs_row_views(device):
    x = torch.randn(64, 8, device=device).t()  # rows of stride 1 do not exist: a copy would be written
    res, w = torch.randn(8, 64, device=device), torch.ones(64, device=device)
    with pytest.raises(ValueError, match="fused_add_rms_norm_ works in place"):
        rooftop.fused_add_rms_norm_(x, res, w)
    shared = torch.randn(1, 64, device=device)  # expanded: three rows in one row's memory
    halves = torch.randn(160, device=device).as_strided((4, 64), (32, 1))  # rows that partly overlap
    for x, res in ((shared.expand(3, 64), torch.randn(3, 64, device=device)),
                   (torch.randn(3, 64, device=device), shared.expand(3, 64)),
                   (halves, torch.randn(4, 64, device=device))):
        with pytest.raises(ValueError, match="rows overlap in memory"):
            rooftop.fused_add_rms_norm_(x, res, w)
        with pytest.raises(ValueError, match="fused_add_layer_norm_ works in place: .* rows overlap"):
            rooftop.fused_add_layer_norm_(x, res, w, None)


# ---------------------------------------------------------------------------------------------
# The reload kernel (_rms_norm_reload_kernel): pass 1 reduces, pass 2 loads the row again


def _small_reload(monkeypatch):
    """The reload kernel's bounds and tiles moved down to reach it at small widths: tiles of 256 values of a
    16-bit x, 128 of fp32."""
    monkeypatch.setattr(rms_norm_mod, "RELOAD_MIN_N", 128)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_RESIDUAL_MIN_N", 128)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_RESIDUAL_MAX_N", rms_norm_mod.RELOAD_MAX_N)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_TILE_BYTES", 512)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_ONE_PROGRAM_MIN_N", 512)  # 1000 wide rows without a residual: maxnreg
    return spy_launches(monkeypatch, rms_norm_mod)


def _reload_off(monkeypatch):
    """The reload kernel switched off, with and without a residual: its widths go to the Gluon path."""
    monkeypatch.setattr(rms_norm_mod, "RELOAD_MAX_N", rms_norm_mod.RELOAD_MIN_N)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_RESIDUAL_MAX_N", rms_norm_mod.RELOAD_RESIDUAL_MIN_N)


def test_reload_widths():
    """The reload kernel takes RELOAD_MIN_N < N <= RELOAD_MAX_N, rows with a residual RELOAD_RESIDUAL_MIN_N < N <=
    RELOAD_RESIDUAL_MAX_N, no quantizing rows."""
    for residual, (lo, hi) in ((False, (rms_norm_mod.RELOAD_MIN_N, rms_norm_mod.RELOAD_MAX_N)),
                               (True, (rms_norm_mod.RELOAD_RESIDUAL_MIN_N, rms_norm_mod.RELOAD_RESIDUAL_MAX_N))):
        assert rms_norm_mod.reload_width(lo + 1, residual) and rms_norm_mod.reload_width(hi, residual)
        assert not rms_norm_mod.reload_width(lo, residual) and not rms_norm_mod.reload_width(hi + 1, residual)
        assert not rms_norm_mod.reload_width(hi, residual, "fp8")
    most = rms_norm_mod.RELOAD_MAX_BYTES // 4  # fp32 rows without a residual: up to RELOAD_MAX_BYTES
    assert rms_norm_mod.reload_width(most, False, None, 4) and not rms_norm_mod.reload_width(most + 16, False, None, 4)
    assert rms_norm_mod.reload_width(rms_norm_mod.RELOAD_RESIDUAL_MAX_N, True, None, 4)
    one = rms_norm_mod.RELOAD_ONE_PROGRAM_MIN_N  # one program an SM past it, without a residual
    assert rms_norm_mod.reload_launch(one + 16, False) == dict(num_warps=rms_norm_mod.RELOAD_WARPS, maxnreg=64)
    assert "maxnreg" not in rms_norm_mod.reload_launch(one, False)
    assert "maxnreg" not in rms_norm_mod.reload_launch(one + 16, True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
# bf16: two tiles (the second masked), two whole ones; fp32 tiles are half as wide
@pytest.mark.parametrize("N", [24000, 32768])
def test_reload_kernel_at_its_widths(N, dtype, device, monkeypatch):
    launched = spy_launches(monkeypatch, rms_norm_mod)
    x, _, w = _inputs((3, N), dtype, device)
    assert rms_norm_mod.reload_width(N, False)
    assert rel_err(rooftop.rms_norm(x, w, 1e-6), rms_norm_reference(x, w, 1e-6)) < TOL[dtype]
    assert launched == ["_rms_norm_reload_kernel"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
# 16-bit: one tile; four (the last masked); two (the second masked); fp32 tiles are half as wide
@pytest.mark.parametrize("N", [256, 1000, 300])
@pytest.mark.parametrize("weight", ["bf16", "fp32", "none", "gemma offset"])
@pytest.mark.parametrize("residual", [False, True])
def test_reload_kernel_matches_reference(N, dtype, weight, residual, device, monkeypatch):
    """The reload kernel at small widths (its bounds and tile moved down), each tile shape of the wide rows."""
    launched = _small_reload(monkeypatch)
    x, res, w = _inputs((5, N), dtype, device, torch.float32 if weight == "fp32" else None)
    w, offset = {"bf16": (w, 0.0), "fp32": (w, 0.0), "none": (None, 0.0), "gemma offset": (w - 1.0, 1.0)}[weight]
    if residual:
        y, r = rooftop.rms_norm(x, w, 1e-6, residual=res, offset=offset)
        y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6, offset)
        assert torch.equal(r, (x.float() + res.float()).to(dtype))
    else:
        y = rooftop.rms_norm(x, w, 1e-6, offset=offset)
        y_ref = rms_norm_reference(x, w, 1e-6, offset)
    assert y.dtype == dtype and rel_err(y, y_ref) < TOL[dtype]
    assert launched == ["_rms_norm_reload_kernel"]


@pytest.mark.parametrize("N", [256, 1000])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reload_kernel_in_place(N, dtype, device, monkeypatch):
    """fused_add_rms_norm_ through the reload kernel: pass 1 overwrites the residual with r, pass 2 re-reads r
    and overwrites x with y."""
    launched = _small_reload(monkeypatch)
    x, res, w = _inputs((3, N), dtype, device)
    y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6)
    r_new = (x.float() + res.float()).to(dtype)
    rooftop.fused_add_rms_norm_(x, res, w, 1e-6)
    assert torch.equal(res, r_new)
    assert rel_err(x, y_ref) < TOL[dtype]
    assert launched == ["_rms_norm_reload_kernel"]


def test_reload_kernel_not_when_quantizing(device, monkeypatch):
    """Quantizing rows keep the on-chip kernel at the reload kernel's widths."""
    launched = _small_reload(monkeypatch)
    x, _, w = _inputs((4, 256), torch.bfloat16, device)
    q, scale = rooftop.rms_norm(x, w, quant="int8")
    assert launched == ["_rms_norm_onchip_kernel"]
    assert rel_err(scale, quantize_rows_reference(rms_norm_reference(x, w), "int8")[1]) < 1e-5


# ---------------------------------------------------------------------------------------------
# The Gluon path (ops/norm_sm90.py): sm_90 GPUs only


def test_gluon_path_never_on_the_cpu(device):
    x = torch.randn(300, 32768, dtype=torch.bfloat16)
    w = torch.ones(32768, dtype=torch.bfloat16)
    assert not rms_norm_mod.uses_gluon(x, None, w, torch.empty_like(x), None)
    assert not rms_norm_mod.uses_gluon(x, x.clone(), w, torch.empty_like(x), torch.empty_like(x))
    assert not rms_norm_mod.uses_gluon(x, None, w, torch.empty_like(x, dtype=torch.float8_e4m3fn), None, "fp8")


def test_gluon_kernel_takes_quantized_rows():
    """norm_sm90.supports (layouts only, no GPU needed): a 1-byte y for RMSNorm with 16-byte aligned rows of whole
    8-byte vectors; not for LayerNorm, not a row stride the 8-element vectors do not divide."""
    from rooftop.ops import norm_sm90
    x = torch.empty(4, 65536, dtype=torch.bfloat16)
    w = torch.empty(65536, dtype=torch.bfloat16)
    q = torch.empty(4, 65536, dtype=torch.int8)
    assert norm_sm90.supports(x, None, w, None, q, None, False)
    assert norm_sm90.supports(x, x, w, None, q, torch.empty_like(x), False)
    assert not norm_sm90.supports(x, None, w, w, q, None, True)
    assert not norm_sm90.supports(x, None, w, None, torch.empty(4, 65540, dtype=torch.int8)[:, :65536], None, False)
    assert not norm_sm90.supports(x, None, w, None, torch.empty(4, 65536, dtype=torch.float16), None, False)


@pytest.mark.gpu
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 49152), (torch.bfloat16, 32776), (torch.bfloat16, 65536),
                                      (torch.float16, 16392), (torch.float16, 40960)])  # 8192 or 4096 chunks
@pytest.mark.parametrize("rows", ["laps", "2^27 elements"])
def test_gpu_gluon_matches_reference(N, dtype, residual, rows, monkeypatch):
    """Every element of the new residual is x + residual rounded once (a buffer refilled before its last read
    shows here: run 1 of benchmarks/exp_gluon_norms.py)."""
    skip_unless_sm90()
    _reload_off(monkeypatch)
    x, res, w = _inputs((norm_gluon_rows() if rows == "laps" else (1 << 27) // N, N), dtype, "cuda")
    if residual:
        y, r = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, 1e-6, residual=res))
        y_ref, r_ref = add_rms_norm_reference(x, res, w, 1e-6)
        assert torch.equal(r, (x.float() + res.float()).to(dtype))
        assert rel_err(r, r_ref) < TOL[dtype]
    else:
        y = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, 1e-6))
        y_ref = rms_norm_reference(x, w, 1e-6)
    assert y.dtype == dtype and rel_err(y, y_ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("weight", ["fp32", "none", "gemma offset"])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("N", [32776, 65536])  # 4096-element chunks; 8192 but with an fp32 weight
def test_gpu_gluon_weight_variants(weight, residual, N, monkeypatch):
    skip_unless_sm90()
    _reload_off(monkeypatch)
    w_dtype = torch.float32 if weight == "fp32" else None
    x, res, w = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda", w_dtype)
    w, offset = {"fp32": (w, 0.0), "none": (None, 0.0), "gemma offset": (w - 1.0, 1.0)}[weight]
    out = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, 1e-6, residual=res if residual else None,
                                                           offset=offset))
    y = out[0] if residual else out
    y_ref = (add_rms_norm_reference(x, res, w, 1e-6, offset)[0] if residual
             else rms_norm_reference(x, w, 1e-6, offset))
    assert rel_err(y, y_ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_gluon_strided_rows(monkeypatch):
    """Row views with stride != N (TMA boxes of one row) take the Gluon path; one whose start is not 16-byte
    aligned falls back to the Triton kernels, with the same results."""
    skip_unless_sm90()
    _reload_off(monkeypatch)
    N = 65536
    wide = torch.randn(norm_gluon_rows(), N + 64, device="cuda", dtype=torch.bfloat16)
    res = torch.randn(norm_gluon_rows(), N, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    x = wide[:, 8:8 + N]  # row stride N + 64, base 16 bytes in
    y, r = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, residual=res))
    y_ref, r_ref = add_rms_norm_reference(x, res, w)
    assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(r, r_ref) < TOL[torch.bfloat16]
    assert rel_err(run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w)), rms_norm_reference(x, w)) < \
        TOL[torch.bfloat16]
    unaligned = wide[:, 4:4 + N]
    assert not rms_norm_mod.uses_gluon(unaligned, None, w, torch.empty_like(unaligned), None)
    assert rel_err(rooftop.rms_norm(unaligned, w), rms_norm_reference(unaligned, w)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 65536), (torch.float16, 57344), (torch.bfloat16, 40976),
                                      (torch.bfloat16, 65536 - 16), (torch.float32, 32768)])
def test_gpu_reload_one_program(dtype, N, monkeypatch):
    """Rows without a residual past 32768 take the reload kernel, past RELOAD_ONE_PROGRAM_MIN_N one program an SM
    (maxnreg=64): whole tiles, a masked last tile, a row view of stride != N, weights of fp32 and none."""
    options = []
    real = rms_norm_mod.launch
    monkeypatch.setattr(rms_norm_mod, "launch", lambda kernel, *a, **k: options.append((kernel.fn.__name__,
                                                                                        k.get("maxnreg")))
                        or real(kernel, *a, **k))
    monkeypatch.setattr(_support, "PLANS_ENABLED", False)
    wide, _, w = _inputs((norm_gluon_rows(), N + 64), dtype, "cuda")
    w = w[:N]
    for x, weight in ((wide[:, :N].contiguous(), w), (wide[:, 64:], w.float()), (wide[:, 64:], None)):
        assert rel_err(rooftop.rms_norm(x, weight, 1e-6), rms_norm_reference(x, weight, 1e-6)) < TOL[dtype]
    one = 64 if N > rms_norm_mod.RELOAD_ONE_PROGRAM_MIN_N else None
    assert options == [("_rms_norm_reload_kernel", one)] * 3


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 65536), (torch.bfloat16, 49152), (torch.float16, 40960),
                                      (torch.bfloat16, 32784)])
@pytest.mark.parametrize("in_place", [False, True])
def test_gpu_reload_with_residual(dtype, N, in_place, monkeypatch):
    """Rows with a residual at RELOAD_RESIDUAL widths take the reload kernel: r is x + residual rounded once, y
    the norm of r, in place too (pass 2 overwrites x after pass 1 read the whole row)."""
    launched = spy_launches(monkeypatch, rms_norm_mod)
    x, res, w = _inputs((norm_gluon_rows(), N), dtype, "cuda")
    y_ref, _ = add_rms_norm_reference(x, res, w, 1e-6)
    r_new = (x.float() + res.float()).to(dtype)
    if in_place:
        rooftop.fused_add_rms_norm_(x, res, w, 1e-6)
        y, r = x, res
    else:
        y, r = rooftop.rms_norm(x, w, 1e-6, residual=res)
    assert launched == ["_rms_norm_reload_kernel"]
    assert torch.equal(r, r_new) and rel_err(y, y_ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("N", [32776, 65536])
def test_gpu_gluon_fused_add_in_place(N, monkeypatch):
    skip_unless_sm90()
    _reload_off(monkeypatch)
    x, res, w = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda")
    y_ref, _ = add_rms_norm_reference(x, res, w, 1e-6)
    r_new = (x.float() + res.float()).bfloat16()
    run_norm_gluon(monkeypatch, lambda: rooftop.fused_add_rms_norm_(x, res, w, 1e-6))
    assert torch.equal(res, r_new)
    assert rel_err(x, y_ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("weight", ["weight", "gemma offset", "none", "fp32 weight"])
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 131072), (torch.bfloat16, 262144), (torch.float16, 196608),
                                      (torch.bfloat16, 1 << 20)])
def test_gpu_gluon_rows_in_parts(dtype, N, weight, monkeypatch):
    """Rows past GLUON_MAX_N (no residual, contiguous) are split into parts (the next power of two of N / PART_MAX_N),
    each a program's, which merge their mean squares: each part's weight columns, a row whose mass is all in one
    part; the result does not depend on which part arrives last and the rows' counters and words are left at zero."""
    skip_unless_sm90()
    from rooftop.ops._support import arrival_counters
    parts = 1 << (-(-N // rms_norm_mod.PART_MAX_N) - 1).bit_length()
    M = rows_in_parts(parts)
    x, _, w = _inputs((M, N), dtype, "cuda", torch.float32 if "fp32" in weight else None)
    w = None if weight == "none" else w
    offset = 1.0 if weight == "gemma offset" else 0.0
    x[1, N // parts:] = 0
    assert rms_norm_mod.gluon_parts(x, None, w, torch.empty_like(x), None) == parts
    y = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, 1e-6, offset=offset))
    ref = rms_norm_mod.rms_norm_reference(x, w, 1e-6, offset)
    assert rel_err(y, ref) < TOL[dtype] and rel_err(y[1], ref[1]) < TOL[dtype]  # row 1: parts that merge matter
    assert torch.equal(y, rooftop.rms_norm(x, w, 1e-6, offset=offset))
    assert not arrival_counters(x.device, M + 2 * M * parts + 4).any()  # counters and swap_pairs' words


def test_resident_params_where_they_fit(monkeypatch):
    """norm_sm90.resident_params: 16-bit parameters kept (CHUNKS buffers each) where x's ring still holds
    RESIDENT_ROWS rows (2; the tests of the kernel take 1), both where they fit, else one of them (the weight first;
    RESIDENT_ONE), only with RESIDENT_PARAMS on."""
    from rooftop.ops import norm_sm90
    kept = norm_sm90.resident_params
    w16, w32 = torch.ones(8, dtype=torch.bfloat16), torch.ones(8)
    monkeypatch.setattr(norm_sm90, "RESIDENT_PARAMS", True)
    monkeypatch.setattr(norm_sm90, "RESIDENT_ONE", True)
    assert norm_sm90.RESIDENT_ROWS == 2
    assert kept(w16, None, 4, 14) == (True, False) and kept(w16, w16, 2, 14) == (True, True)
    assert kept(w16, w16, 4, 14) == (True, False)  # 6 buffers left for rows of 4 chunks with both: the weight alone
    assert kept(None, w16, 4, 14) == (False, True) and kept(w32, w16, 4, 14) == (False, True)
    assert kept(w16, w32, 4, 14) == (True, False)
    assert kept(w16, None, 4, 12) == (True, False) and kept(w16, None, 4, 11) == (False, False)
    assert kept(w16, w16, 4, 11) == (False, False) and kept(w32, w32, 4, 14) == (False, False)
    monkeypatch.setattr(norm_sm90, "RESIDENT_ONE", False)
    assert kept(w16, w16, 4, 14) == (False, False) and kept(w16, w32, 4, 14) == (False, False)
    assert kept(w16, None, 4, 14) == (True, False)
    monkeypatch.setattr(norm_sm90, "RESIDENT_ROWS", 1)
    assert kept(w16, w16, 4, 14) == (True, True) and kept(w16, w16, 4, 11) == (False, False)
    assert kept(w32, None, 4, 14) == (False, False) and kept(None, None, 4, 14) == (False, False)
    monkeypatch.setattr(norm_sm90, "RESIDENT_PARAMS", False)
    assert kept(w16, None, 4, 14) == (False, False)


@pytest.mark.gpu
@pytest.mark.parametrize("quant", [None, "fp8", "int8"])
@pytest.mark.parametrize("N, parts", [(32768, 1), (32776, 1), (65536, 2), (98304, 4)])
@pytest.mark.parametrize("weight", ["bf16", "gemma offset", "fp32"])
@pytest.mark.parametrize("residual", [False, True])
def test_gpu_gluon_resident_params(quant, N, parts, weight, residual, monkeypatch):
    """The Gluon kernel with its weight kept in shared memory (norm_sm90.RESIDENT_PARAMS), called directly: whole rows
    (whole chunks and not), parts (each program its part's weight columns), quantized or not, with a residual or not;
    fp32 weights stay in L2. Row 1's largest value sits in its last part."""
    skip_unless_sm90()
    from rooftop.ops import norm_sm90
    from rooftop.ops.softmax_sm90 import part_views
    monkeypatch.setattr(norm_sm90, "RESIDENT_PARAMS", True)
    monkeypatch.setattr(norm_sm90, "RESIDENT_ROWS", 1)  # kept wherever x's ring holds a row: every case here
    M = rows_in_parts(parts) if parts > 1 else norm_gluon_rows()
    x, res, w = _inputs((M, N), torch.bfloat16, "cuda", torch.float32 if weight == "fp32" else None)
    w, offset = (w - 1.0, 1.0) if weight == "gemma offset" else (w, 0.0)
    x[1, -1] = 40.0
    res = res if residual else None
    y = torch.empty_like(x, dtype=rms_norm_mod.QUANT_FORMATS[quant][0] if quant else x.dtype)
    h = torch.empty_like(x) if residual else None
    scale = torch.empty(M, 1, device="cuda") if quant else None
    part_x, part_res = part_views(parts, x, res)[:2] if parts > 1 else (x, res)
    chunk, buffers, res_stages = norm_sm90.config(part_x, part_res, w, None, False)
    kept = norm_sm90.resident_params(w, None, -(-part_x.shape[1] // chunk), buffers - (res_stages if residual else 0))
    assert kept == (weight != "fp32", False)
    quant_args = rms_norm_mod.QUANT_FORMATS[quant][1:] if quant else (0, 1.0)
    norm_sm90.norm_rows(x, res, w, None, y, h, 1e-6, offset, False, torch.cuda.get_device_properties(0)
                        .multi_processor_count, parts=parts, scale=scale, quant=quant_args)
    if residual:
        assert torch.equal(h, (x.float() + res.float()).bfloat16())
    y_ref = rms_norm_reference(h if residual else x, w, 1e-6, offset)
    if quant:
        _assert_quantized(y, scale, y_ref, quant)
    else:
        assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(y[1], y_ref[1]) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_gluon_dispatch(monkeypatch):
    """The Gluon path takes 16-bit rows of GLUON_MIN_N < N <= GLUON_MAX_N but TRITON_RES_N with a residual (N a
    multiple of 8) with at least 2 rows per SM, y in x's dtype or quantized (QUANT_GLUON_MIN_N < N), and nothing
    else;
    GLUON_ENABLED switches it off."""
    skip_unless_sm90()
    M = 2 * torch.cuda.get_device_properties(0).multi_processor_count

    def takes(shape, dtype=torch.bfloat16, residual=False, quant=None, y_dtype=None):
        x = torch.empty(shape, device="cuda", dtype=dtype)
        w = torch.empty(shape[1], device="cuda", dtype=dtype)
        y_dtype = rms_norm_mod.QUANT_FORMATS[quant][0] if quant else y_dtype
        y = torch.empty(shape, device="cuda", dtype=y_dtype or dtype)
        r = torch.empty_like(x) if residual else None
        return rms_norm_mod.uses_gluon(x, torch.empty_like(x) if residual else None, w, y, r, quant)

    assert takes((M, 16392), torch.float16) and takes((M, 32776))
    assert not takes((M, 32768), residual=True)  # TRITON_RES_N: Triton's kernel wins
    # the reload kernel's widths, but for rows whose Triton loads do not vectorize (N a multiple of 8, not 16)
    assert not takes((M, 32768)) and not takes((M, 24576)) and takes((M, 16392), torch.float16)
    assert not takes((M, 65536)) and not takes((M, 49152)) and takes((M, 65528))
    assert not takes((M, 65536), residual=True) and not takes((M, 49152), residual=True)
    assert takes((M, 40968), residual=True)
    _reload_off(monkeypatch)
    assert takes((M, 32768)) and takes((M, 24576)) and takes((M, 65536))
    assert takes((M, 65536), residual=True) and takes((M, 49152), residual=True)
    monkeypatch.undo()
    assert not takes((M, 16384))  # not past GLUON_MIN_N: the on-chip kernel's
    assert not takes((M, 65536 + 8))  # past GLUON_MAX_N, not a multiple of 8 * 2: not in parts
    assert takes((M, 131072)) and takes((M, 131072), residual=True)  # in parts (a residual: past PARTS_RESIDUAL_MIN_N)
    # quantizing rows: past QUANT_GLUON_MIN_N, TRITON_RES_N too, in parts with a residual too
    assert takes((M, 16384), quant="fp8") and not takes((M, 8192), residual=True, quant="int8")
    assert takes((M, 8192), quant="int8") and not takes((M, 4096), quant="fp8")  # without a residual from 8192
    assert takes((M, 32768), residual=True, quant="int8") and takes((M, 131072), residual=True, quant="fp8")
    wide = torch.empty(M, 65536 + 64, device="cuda", dtype=torch.bfloat16)[:, :65536]  # not in parts: whole rows
    w = torch.empty(65536, device="cuda", dtype=torch.bfloat16)
    q = torch.empty(M, 65536, device="cuda", dtype=torch.float8_e4m3fn)
    assert rms_norm_mod.gluon_parts(wide, None, w, q, None, "fp8") == 1
    # contiguous: whole rows to QUANT_WHOLE_MAX_N without a residual, parts of QUANT_PART_MAX_N past it and with one
    whole = rms_norm_mod.QUANT_WHOLE_MAX_N
    narrower = torch.empty(M, whole, device="cuda", dtype=torch.bfloat16)
    assert rms_norm_mod.gluon_parts(narrower, None, w[:whole], q[:, :whole], None, "fp8") == 1
    assert rms_norm_mod.gluon_parts(wide.contiguous(), None, w, q, None, "fp8") == (1 if 65536 <= whole else 2)
    assert rms_norm_mod.gluon_parts(wide.contiguous(), wide.contiguous(), w, q, torch.empty_like(wide), "fp8") == 2
    wider = torch.empty(M, 131072, device="cuda", dtype=torch.bfloat16)
    assert rms_norm_mod.gluon_parts(wider, None, torch.empty(131072, device="cuda", dtype=torch.bfloat16),
                                    torch.empty_like(wider, dtype=torch.float8_e4m3fn), None, "fp8") == 4
    assert not takes((M, 32772))  # N not a multiple of 8: no TMA descriptor
    assert not takes((M, 65536), torch.float32)
    assert not takes((M - 1, 65536))  # fewer than 2 rows per SM
    assert takes((M, 65536), quant="fp8") and not takes((M, 65536), y_dtype=torch.float32)
    monkeypatch.setattr(rms_norm_mod, "GLUON_ENABLED", False)
    assert not takes((M, 65536))


@pytest.mark.gpu
@pytest.mark.parametrize("quant", ["fp8", "int8"])
@pytest.mark.parametrize("weight", ["weight", "fp32 gemma offset", "none"])
@pytest.mark.parametrize("N, parts", [(16384, 1), (32776, 1), (57344, 2), (65536, 2), (131072, 4), (1 << 20, 32)])
@pytest.mark.parametrize("residual", [False, True])
def test_gpu_gluon_quantized(quant, weight, N, parts, residual, monkeypatch):
    """Quantizing rows on the Gluon path (rows in parts past QUANT_PART_MAX_N with a residual, past QUANT_WHOLE_MAX_N
    without one, whole rows there on consumers of QUANT_WIDE_WARPS warps): the scale of each whole row, y / scale
    rounded as the format does, the new residual bit for bit; row 1's largest value sits in its last part."""
    from rooftop.ops import norm_sm90
    skip_unless_sm90()
    if not residual and N <= rms_norm_mod.QUANT_WHOLE_MAX_N:
        parts = 1
    M = rows_in_parts(parts) if parts > 1 else norm_gluon_rows()
    x, res, w = _inputs((M, N), torch.bfloat16, "cuda", torch.float32 if "fp32" in weight else None)
    w, offset = {"weight": (w, 0.0), "fp32 gemma offset": (w - 1.0, 1.0), "none": (None, 0.0)}[weight]
    x[1, -1] = 40.0
    res = res if residual else None
    q_dtype = rms_norm_mod.QUANT_FORMATS[quant][0]
    assert rms_norm_mod.gluon_parts(x, res, w, torch.empty_like(x, dtype=q_dtype), res, quant) == parts
    warps = []
    real = norm_sm90.norm_rows
    monkeypatch.setattr(norm_sm90, "norm_rows", lambda *a, **k: warps.append(k.get("warps")) or real(*a, **k))
    out = run_norm_gluon(monkeypatch, lambda: rooftop.rms_norm(x, w, 1e-6, residual=res, offset=offset, quant=quant))
    wide = not residual and parts == 1 and N > rms_norm_mod.QUANT_PART_MAX_N  # (32776 with one: whole, 4 warps)
    assert warps == [rms_norm_mod.QUANT_WIDE_WARPS if wide else None]
    if residual:
        q, scale, r = out
        assert torch.equal(r, (x.float() + res.float()).bfloat16())
        y_ref = rms_norm_reference(r, w, 1e-6, offset)
    else:
        q, scale = out
        y_ref = rms_norm_reference(x, w, 1e-6, offset)
    _assert_quantized(q, scale, y_ref, quant)


def test_quantized_rows_feed_the_fp8_gemm(device):
    """rms_norm(quant="fp8")'s (q, scale) are matmul_fp8's a and per-row a_scale as they come: the norm's rows times an
    fp8 weight with per-output-channel scales match the unquantized product to fp8's precision (both operands
    rounded to e4m3: ~5% RMS), with and without a residual."""
    from rooftop.ops.matmul import matmul_fp8
    M, K, N = 24, 256, 48
    x, res, w = _inputs((M, K), torch.bfloat16, device)
    weight = torch.randn(N, K, device=device)
    w_scale = weight.abs().amax(1) / 448.0
    w8 = (weight / w_scale[:, None]).to(torch.float8_e4m3fn)
    for residual in (None, res):
        q, scale = rooftop.rms_norm(x, w, 1e-6, residual=residual, quant="fp8")[:2]
        h = x if residual is None else (x.float() + residual.float()).bfloat16()
        out = matmul_fp8(q, w8.t(), scale, w_scale)
        assert out.dtype == torch.bfloat16 and out.shape == (M, N)
        assert rel_err(out, rms_norm_reference(h, w, 1e-6).double() @ weight.double().t()) < 0.1


@pytest.mark.parametrize("name", ["rms_norm_fp8", "add_rms_norm_fp8"])
def test_registry_quantized(name, device):
    """The quantized norms in the benchmark registry: bytes of a 1-byte y and a scale a row; rooftop, eager and the
    reference agree on the dequantized rows to fp8's precision."""
    from rooftop import registry
    spec = registry.get(name)
    residual = name.startswith("add")
    assert spec.family == "rms_norm" and spec.cases == registry.row_sweep()
    M, N = 512, 4096
    assert spec.cost((M, N), torch.bfloat16).bytes == (3 if residual else 1) * M * N * 2 + M * N + 4 * M + N * 2
    inputs = spec.make_inputs((3, 256), torch.bfloat16, device)
    ref_q, ref_scale = spec.reference(*inputs)[:2]
    for out in (spec.run(*inputs), spec.eager(*inputs)):
        assert rel_err(out[0].double() * out[1].double(), ref_q * ref_scale) < 0.07  # e4m3: 3 mantissa bits


def test_expanded_weight_is_refused(device):
    """A weight of stride 0 (an expanded scalar as wide as x's rows) is refused as not contiguous."""
    x = torch.randn(2, 64, device=device, dtype=torch.bfloat16)
    w = torch.ones(1, device=device, dtype=torch.bfloat16).expand(64)
    with pytest.raises(ValueError, match="weight must be contiguous"):
        rooftop.rms_norm(x, w)


def test_nan_eps_is_refused(device):
    """eps = nan is refused (not >= 0), as a negative eps is."""
    x, w = torch.randn(2, 64, device=device, dtype=torch.bfloat16), torch.ones(64, device=device, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="eps must be a non-negative number"):
        rooftop.rms_norm(x, w, float("nan"))


def test_in_place_on_padded_rows(device):
    """fused_add_rms_norm_ writes padded 3-D rows (row stride past N) in place, without a copy."""
    w = torch.rand(64, device=device, dtype=torch.bfloat16) + 0.5
    x = torch.randn(2, 3, 128, device=device, dtype=torch.bfloat16)[..., :64]
    res = torch.randn(2, 3, 64, device=device, dtype=torch.bfloat16)
    y_ref, r_ref = add_rms_norm_reference(x.clone(), res.clone(), w)
    rooftop.fused_add_rms_norm_(x, res, w)
    assert rel_err(x, y_ref) < TOL[torch.bfloat16] and rel_err(res, r_ref) < TOL[torch.bfloat16]
