import pytest
import torch

from conftest import (HAS_CUDA, TOL, norm_gluon_rows, rel_err, rows_in_parts, run_norm_gluon, skip_unless_sm90,
                      spy_launches)
from rooftop import registry
from rooftop.ops import layer_norm as layer_norm_mod, norm_sm90
from rooftop.ops.layer_norm import (ONCHIP_MAX, add_layer_norm_reference, fused_add_layer_norm_, layer_norm,
                                    layer_norm_reference, looped_config)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# 1, odd, prime, non-power-of-two, the widest on-chip row (32768), the looped path: a partial last
# tile (32771, 41000), whole tiles only (49152: 3 tiles of 16-bit values, 6 of fp32)
SHAPES = [(1, 1), (3, 7), (5, 1000), (4, 4096), (2, 32768), (3, 32771), (2, 41000), (2, 49152)]
ONCHIP, LOOPED = (4, 4096), (2, 41000)
WELFORD = (2, 12000)  # the Welford kernel's width: 5 whole tiles and a masked tail


def _inputs(shape, dtype, device, param_dtype=None):
    x = torch.randn(shape, device=device, dtype=dtype)
    res = torch.randn(shape, device=device, dtype=dtype)
    w = torch.rand(shape[-1], device=device, dtype=param_dtype or dtype) + 0.5
    b = torch.randn(shape[-1], device=device, dtype=param_dtype or dtype)
    return x, res, w, b


def test_paths_under_test():
    assert ONCHIP[1] <= ONCHIP_MAX < 32771 <= LOOPED[1]
    assert not layer_norm_mod.welford_width(ONCHIP[1], False) and not layer_norm_mod.welford_width(LOOPED[1], False)
    assert layer_norm_mod.welford_width(WELFORD[1], False) and WELFORD[1] % layer_norm_mod.welford_config(WELFORD[1])[0]
    assert 49152 % looped_config(49152, 2, True)[0] == 49152 % looped_config(49152, 4, True)[0] == 0  # whole tiles
    assert 41000 % looped_config(41000, 2, True)[0] != 0 and 41000 % looped_config(41000, 4, True)[0] != 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm_matches_reference(shape, dtype, device):
    x, _, w, b = _inputs(shape, dtype, device)
    y = layer_norm(x, w, b, 1e-5)
    assert y.dtype == dtype and y.shape == x.shape
    assert rel_err(y, layer_norm_reference(x, w, b, 1e-5)) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_layer_norm_matches_reference(shape, dtype, device):
    x, res, w, b = _inputs(shape, dtype, device)
    y, r = layer_norm(x, w, b, 1e-6, residual=res)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b, 1e-6)
    assert y.dtype == r.dtype == dtype and y.shape == r.shape == x.shape
    assert rel_err(y, y_ref) < TOL[dtype]
    assert rel_err(r, r_ref) < TOL[dtype]
    # the new residual is x + residual rounded once to the input dtype
    assert torch.equal(r, (x.float() + res.float()).to(dtype))


@pytest.mark.parametrize("params, shape", [("no weight", ONCHIP), ("no bias", ONCHIP), ("neither", ONCHIP),
                                           ("fp32 weight and bias", ONCHIP), ("neither", LOOPED),
                                           ("fp32 weight and bias", LOOPED)])
def test_optional_and_fp32_params(params, shape, device):
    x, res, w, b = _inputs(shape, torch.bfloat16, device, param_dtype=torch.float32 if "fp32" in params else None)
    w = None if params in ("no weight", "neither") else w
    b = None if params in ("no bias", "neither") else b
    y, _ = layer_norm(x, w, b, residual=res)
    assert y.dtype == torch.bfloat16
    assert rel_err(y, add_layer_norm_reference(x, res, w, b)[0]) < TOL[torch.bfloat16]
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("shape", [(1, 4096), (5, 1000), LOOPED])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_add_layer_norm_in_place(shape, dtype, device):
    x, res, w, b = _inputs(shape, dtype, device)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b, 1e-5)
    x_ptr, res_ptr = x.data_ptr(), res.data_ptr()
    assert fused_add_layer_norm_(x, res, w, b, 1e-5) is None
    assert x.data_ptr() == x_ptr and res.data_ptr() == res_ptr
    assert rel_err(x, y_ref) < TOL[dtype]
    assert rel_err(res, r_ref) < TOL[dtype]


@pytest.mark.parametrize("shape", [(9, 32784), (9, 49152)])  # more rows than the interpreter's 8 programs
def test_looped_programs_take_several_rows(shape, device):
    x, res, w, b = _inputs(shape, torch.bfloat16, device)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]
    fused_add_layer_norm_(x, res, w, b)
    assert rel_err(x, y_ref) < TOL[torch.bfloat16] and rel_err(res, r_ref) < TOL[torch.bfloat16]
    x32 = torch.randn(shape, device=device)
    assert rel_err(layer_norm(x32, None, None), layer_norm_reference(x32, None, None)) < TOL[torch.float32]


def test_welford_float32_outlier_first_value(device):
    """fp32 rows of randn whose first value is 1e4 away: the Welford kernel's shift is not the first value for
    fp32 rows (it would leave fp32's tolerance), with and without a residual (in place too)."""
    x = torch.randn(WELFORD, device=device)
    x[:, 0] = 1e4
    w = torch.rand(WELFORD[-1], device=device) + 0.5
    assert rel_err(layer_norm(x, w, None), layer_norm_reference(x, w, None)) < TOL[torch.float32]
    res = torch.randn_like(x)
    y, r = layer_norm(res, w, None, residual=x)
    assert rel_err(y, layer_norm_reference(r, w, None)) < TOL[torch.float32]
    xc, rc = res.clone(), x.clone()
    fused_add_layer_norm_(xc, rc, w, None)
    assert torch.equal(rc, r) and rel_err(xc, layer_norm_reference(r, w, None)) < TOL[torch.float32]


@pytest.mark.parametrize("shape", [ONCHIP, LOOPED, WELFORD])
def test_large_mean_float32(shape, device):
    """Rows 1e4 + randn: statistics from shifted values keep fp32 precision; the textbook one-pass
    E[x^2] - E[x]^2 in fp32 fails the same check."""
    x = 1e4 + torch.randn(shape, device=device)
    w = torch.rand(shape[-1], device=device) + 0.5
    ref = layer_norm_reference(x, w, None)
    assert rel_err(layer_norm(x, w, None), ref) < TOL[torch.float32]
    mean = x.mean(-1, keepdim=True)
    naive = (x - mean) * torch.rsqrt((x * x).mean(-1, keepdim=True) - mean * mean + 1e-5) * w
    assert not rel_err(naive, ref) < TOL[torch.float32]
    # the same through the residual stream: r = randn + (1e4 + randn), rounded to fp32
    y, r = layer_norm(torch.randn_like(x), w, None, residual=x)
    assert rel_err(y, layer_norm_reference(r, w, None)) < TOL[torch.float32]


@pytest.mark.parametrize("N", [67, 130])
def test_looped_partial_groups(N, monkeypatch, device):
    """The looped kernel at tiles of 64 on rows of 67 / 130: the last tile ends inside a lane's group of 4 fp32
    values, whose count and mean are its live values' (rows 100 + randn, so that a wrong group mean shows)."""
    monkeypatch.setattr(layer_norm_mod, "ONCHIP_MAX", 32)
    monkeypatch.setattr(layer_norm_mod, "looped_config", lambda *args: (64, 4))
    names = spy_launches(monkeypatch, layer_norm_mod)
    x = 100 + torch.randn(5, N, device=device)
    w, b = torch.rand(N, device=device) + 0.5, torch.randn(N, device=device)
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.float32]
    assert names == ["_layer_norm_looped_kernel"]


@pytest.mark.parametrize("shape", [ONCHIP, LOOPED, WELFORD])
def test_large_mean_bfloat16(shape, device):
    # bf16 values near 1e4 are 64 apart: a spread of a few steps around a mean 150 times larger
    x = (1e4 + 64 * torch.randn(shape, device=device)).to(torch.bfloat16)
    assert x.double().std(-1).min() > 32
    w = torch.rand(shape[-1], device=device, dtype=torch.bfloat16) + 0.5
    b = torch.randn(shape[-1], device=device, dtype=torch.bfloat16)
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("shape", [ONCHIP, LOOPED, WELFORD])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_constant_rows_give_the_bias(shape, dtype, device):
    x = torch.full(shape, 1e4, device=device, dtype=dtype)  # variance 0: y = bias, never nan
    _, _, w, b = _inputs(shape, dtype, device)
    assert rel_err(layer_norm(x, w, b), b.expand(shape)) < TOL[dtype]


@pytest.mark.parametrize("width", [1000, 41000])  # on-chip, looped
def test_leading_dims_and_non_contiguous_rows(width, device):
    big = torch.randn(2, 1, width + 100, device=device, dtype=torch.float16)
    x = big[..., 50:width + 50]  # row stride != width, unaligned start
    res = torch.randn(2, 1, width, device=device, dtype=torch.float16)
    _, _, w, b = _inputs((width,), torch.float16, device)
    y, r = layer_norm(x, w, b, residual=res)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
    assert y.shape == r.shape == (2, 1, width)
    assert rel_err(y, y_ref) < TOL[torch.float16] and rel_err(r, r_ref) < TOL[torch.float16]
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.float16]


@pytest.mark.parametrize("shape", [(0, 64), (3, 0), (0,)])
def test_empty(shape, device):
    x = torch.randn(shape, device=device)
    w, b = torch.ones(shape[-1], device=device), torch.zeros(shape[-1], device=device)
    assert layer_norm(x, w, b).shape == shape
    y, r = layer_norm(x, w, b, residual=x.clone())
    assert y.shape == r.shape == shape
    fused_add_layer_norm_(x, x.clone(), w, b)


def test_bad_input(device):
    x = torch.randn(4, 64, device=device)
    w, b = torch.ones(64, device=device), torch.zeros(64, device=device)
    with pytest.raises(TypeError, match="x has dtype int64"):
        layer_norm(torch.ones(4, 64, dtype=torch.int64, device=device), w, b)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        layer_norm([1.0, 2.0], w, b)
    with pytest.raises(ValueError, match=r"weight must have shape \(64,\)"):
        layer_norm(x, torch.ones(32, device=device), b)
    with pytest.raises(ValueError, match=r"weight must have shape \(64,\)"):
        fused_add_layer_norm_(x, torch.randn_like(x), torch.ones(32, device=device), None)
    with pytest.raises(ValueError, match=r"bias must have shape \(64,\)"):
        layer_norm(x, w, torch.zeros(4, 64, device=device))
    with pytest.raises(TypeError, match="bias has dtype float64"):
        layer_norm(x, w, b.double())
    with pytest.raises(ValueError, match="weight must be contiguous"):
        layer_norm(x, torch.ones(128, device=device)[::2], b)
    with pytest.raises(ValueError, match="residual has shape"):
        layer_norm(x, w, b, residual=torch.randn(4, 32, device=device))
    with pytest.raises(TypeError, match="residual has dtype"):
        layer_norm(x, w, b, residual=x.half())
    with pytest.raises(ValueError, match="weight is on meta"):
        layer_norm(x, torch.ones(64, device="meta"), b)
    with pytest.raises(ValueError, match="bias is on meta"):
        layer_norm(x, w, torch.zeros(64, device="meta"))
    with pytest.raises(ValueError, match="residual is on meta"):
        layer_norm(x, w, b, residual=torch.randn(4, 64, device="meta"))
    with pytest.raises(ValueError, match="eps"):
        layer_norm(x, w, b, eps=-1.0)
    with pytest.raises(ValueError, match="residual is required"):
        fused_add_layer_norm_(x, None, w, b)
    with pytest.raises(ValueError, match="in place"):
        fused_add_layer_norm_(torch.randn(64, 4, device=device).t(), x.clone(), w, b)


def test_registry_entries(device):
    specs = {s.name: s for s in registry.all_ops() if s.family == "layer_norm"}
    assert set(specs) == {"layer_norm", "add_layer_norm"}
    for spec in specs.values():
        inputs = spec.make_inputs((3, 96), torch.float32, device)
        ref = spec.reference(*inputs)
        out, eager = spec.run(*inputs), spec.eager(*inputs)
        for got in (out, eager):
            got, want = (got, ref) if spec.name == "layer_norm" else (got[0], ref[0])
            assert rel_err(got, want) < TOL[torch.float32]
    tensors = {"layer_norm": 2, "add_layer_norm": 4}
    for name, spec in specs.items():  # each [M, N] tensor once, weight and bias once
        assert spec.cost((8, 1024), torch.bfloat16).bytes == (tensors[name] * 8 * 1024 + 2 * 1024) * 2


def test_ops_are_registered():
    for name in ("layer_norm", "add_layer_norm", "fused_add_layer_norm_"):
        assert hasattr(torch.ops.rooftop, name)


def test_compiles_without_graph_break(device):
    from torch._dynamo.testing import CompileCounterWithBackend

    def block(x, residual, weight, bias):
        """A pre-norm block's norm as a model calls it, then the next block's, in place."""
        y, residual = layer_norm(x, weight, bias, 1e-5, residual=residual)
        h = y * 2.0
        fused_add_layer_norm_(h, residual, weight, bias, 1e-5)
        return layer_norm(h, weight, None), residual

    x, res, w, b = _inputs((2, 3, 1000), torch.float16, device)
    y1, r1 = add_layer_norm_reference(x, res, w, b)
    y2, r2 = add_layer_norm_reference(y1.half() * 2.0, r1.half(), w, b)
    torch._dynamo.reset()
    # on the CPU the custom ops' boundaries are what we test; inductor's C++ codegen is not ours
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    out, new_res = torch.compile(block, backend=counter, fullgraph=True)(x, res.clone(), w, b)
    assert counter.frame_count == 1
    assert rel_err(new_res, r2) < TOL[torch.float16]
    assert rel_err(out, layer_norm_reference(y2.half(), w, None)) < 5e-3


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(16384, 8192), (2048, 65536), (512, 262144), (64, 1 << 20), (1, 262144)])
def test_gpu_sizes(shape):
    x, res, w, b = _inputs(shape, torch.bfloat16, "cuda")
    y, r = layer_norm(x, w, b, residual=res)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
    assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(r, r_ref) < TOL[torch.bfloat16]
    assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(4, 262144), (2, 1 << 20)])
def test_gpu_large_mean_wide_rows(shape):
    x = 1e4 + torch.randn(shape, device="cuda")
    assert rel_err(layer_norm(x, None, None), layer_norm_reference(x, None, None)) < TOL[torch.float32]


@pytest.mark.gpu
def test_gpu_welford_wide_rows(monkeypatch):
    """The Welford kernel's wide rows on the GPU (three tiles and a tail; four tiles, five: w and b past L1), rows
    offset by 1e4, and a row view of stride != N."""
    launched = spy_launches(monkeypatch, layer_norm_mod)
    for N in (24584, 32768, 40960):
        wide = (1e4 + 64 * torch.randn(norm_gluon_rows(), N + 64, device="cuda")).bfloat16()
        w, b = torch.randn(N, device="cuda", dtype=torch.bfloat16), torch.randn(N, device="cuda", dtype=torch.bfloat16)
        for x in (wide[:, :N].contiguous(), wide[:, 64:]):
            assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]
    assert launched == ["_layer_norm_welford_kernel"] * 6


@pytest.mark.slow
@pytest.mark.parametrize("width", [8192, 65536])  # on-chip, looped
def test_past_2_31_elements(width):
    x, res, w, b = _inputs((2**31 // width + 3, width), torch.bfloat16, "cuda")
    y, r = layer_norm(x, w, b, residual=res)
    tail = slice(x.shape[0] - 4, None)
    y_ref, r_ref = add_layer_norm_reference(x[tail], res[tail], w, b)
    assert rel_err(y[tail], y_ref) < TOL[torch.bfloat16] and rel_err(r[tail], r_ref) < TOL[torch.bfloat16]
    del y, r
    y = layer_norm(x, w, b)
    assert rel_err(y[tail], layer_norm_reference(x[tail], w, b)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 4096), (8, 100000)])  # on-chip, looped
def test_cuda_graph_capture_and_replay(shape):
    x, res, w, b = _inputs(shape, torch.bfloat16, "cuda")
    layer_norm(x, w, b, residual=res)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y, r = layer_norm(x, w, b, residual=res)
    for _ in range(2):  # fresh data through the same graph
        x.copy_(torch.randn_like(x))
        res.copy_(torch.randn_like(res))
        graph.replay()
        y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
        assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(r, r_ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_peers_and_eager_agree():
    for spec in registry.all_ops():
        if spec.family != "layer_norm":
            continue
        inputs = spec.make_inputs((64, 4096), torch.bfloat16, "cuda")
        ref = spec.reference(*inputs)
        ref = ref if spec.name == "layer_norm" else ref[0]
        providers = {"eager": spec.eager, **{name: factory() for name, factory in spec.peers.items()}}
        for name, fn in providers.items():
            if fn is not None:
                out = fn(*inputs)
                out = out if spec.name == "layer_norm" else out[0]
                assert rel_err(out, ref) < TOL[torch.bfloat16], (spec.name, name)


# ---------------------------------------------------------------------------------------------
# The Welford kernel (_layer_norm_welford_kernel): one row a program, N a constexpr


def _small_welford(monkeypatch, rblock=128):
    """The Welford kernel's bounds and tile moved down to reach it at small widths."""
    monkeypatch.setattr(layer_norm_mod, "WELFORD_MIN_N", 64)
    monkeypatch.setattr(layer_norm_mod, "WELFORD_RBLOCK", rblock)
    monkeypatch.setattr(layer_norm_mod, "WELFORD_RESIDUAL", True)
    return spy_launches(monkeypatch, layer_norm_mod)


def test_welford_widths():
    """The Welford kernel takes WELFORD_MIN_N < N <= WELFORD_MAX_N, rows with a residual only if WELFORD_RESIDUAL,
    and 16-bit rows without a residual up to WELFORD_WIDE_MAX_N; its tile is WELFORD_RBLOCK or, for narrower rows,
    the widest power of two that fits, and the wide rows' WELFORD_WIDE_RBLOCK."""
    mod = layer_norm_mod
    lo, hi, wide = mod.WELFORD_MIN_N, mod.WELFORD_MAX_N, mod.WELFORD_WIDE_MAX_N
    assert mod.welford_width(lo + 1, False) and mod.welford_width(hi, False) and mod.welford_width(wide, False)
    assert not mod.welford_width(lo, False) and not mod.welford_width(wide + 1, False)
    assert mod.welford_width(hi, True) == mod.WELFORD_RESIDUAL and not mod.welford_width(hi + 1, True)
    assert not mod.welford_width(hi + 1, False, 4) and mod.welford_width(hi, False, 4)
    assert mod.welford_config(hi) == (mod.WELFORD_RBLOCK, mod.WELFORD_WARPS)
    assert mod.welford_config(wide) == (mod.WELFORD_WIDE_RBLOCK, mod.WELFORD_WIDE_WARPS)
    assert mod.welford_config(1000) == (min(512, mod.WELFORD_RBLOCK), mod.WELFORD_WARPS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
# whole tiles and a tail; whole tiles only; the wide rows' three tiles and a tail, four and five whole tiles (16-bit
# only; w and b past L1 from 24576)
@pytest.mark.parametrize("N", [WELFORD[1], 16384, 24584, 32768, 40960])
def test_welford_kernel_at_its_widths(N, dtype, device, monkeypatch):
    launched = spy_launches(monkeypatch, layer_norm_mod)
    x, _, w, b = _inputs((3, N), dtype, device)
    if layer_norm_mod.welford_width(N, False, x.element_size()):
        assert rel_err(layer_norm(x, w, b), layer_norm_reference(x, w, b)) < TOL[dtype]
        assert launched == ["_layer_norm_welford_kernel"]


def _check_welford(N, dtype, params, residual, offset, device, monkeypatch):
    launched = _small_welford(monkeypatch)
    x, res, w, b = _inputs((5, N), dtype, device, param_dtype=torch.float32 if "fp32" in params else None)
    w = None if params in ("no weight", "neither") else w
    b = None if params in ("no bias", "neither") else b
    if offset:
        x = (offset + (64 if dtype == torch.bfloat16 else 1) * torch.randn(x.shape, device=device)).to(dtype)
    if residual:
        y, r = layer_norm(res, w, b, 1e-5, residual=x)
        assert torch.equal(r, (res.float() + x.float()).to(dtype))
        y_ref = layer_norm_reference(r, w, b, 1e-5)  # of the residual as stored
        assert rel_err(r, add_layer_norm_reference(res, x, w, b, 1e-5)[1]) < TOL[dtype]
    else:
        y = layer_norm(x, w, b, 1e-5)
        y_ref = layer_norm_reference(x, w, b, 1e-5)
    assert y.dtype == dtype and rel_err(y, y_ref) < TOL[dtype]
    assert launched == ["_layer_norm_welford_kernel"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("N", [256, 1000, 300, 128])  # 2 tiles; 7 and a tail; 2 and a tail (RBLOCK 128); 1
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_welford_kernel_matches_reference(N, dtype, residual, offset, device, monkeypatch):
    """The Welford kernel at small widths, rows centred on 0 and on 1e4 (bf16 values near 1e4 are 64 apart: 64
    randn around it)."""
    _check_welford(N, dtype, "weight and bias", residual, offset, device, monkeypatch)


@pytest.mark.parametrize("params", ["fp32 weight and bias", "no weight", "no bias", "neither"])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("past_l1", [False, True])
def test_welford_kernel_optional_and_fp32_params(params, residual, past_l1, device, monkeypatch):
    """Optional and fp32 w and b, loaded in pass 2 through L1 or past it (WELFORD_PARAMS_PAST_L1_MIN_N)."""
    monkeypatch.setattr(layer_norm_mod, "WELFORD_PARAMS_PAST_L1_MIN_N", 0 if past_l1 else 1 << 30)
    _check_welford(1000, torch.bfloat16, params, residual, 1e4, device, monkeypatch)


@pytest.mark.parametrize("N", [256, 1000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_welford_kernel_constant_rows_and_in_place(N, dtype, device, monkeypatch):
    """Constant rows (variance 0) give the bias; fused_add_layer_norm_ through the kernel: pass 1 overwrites the
    residual with r, pass 2 re-reads r and overwrites x with y."""
    launched = _small_welford(monkeypatch)
    x, res, w, b = _inputs((3, N), dtype, device)
    assert rel_err(layer_norm(torch.full_like(x, 1e4), w, b), b.expand(x.shape)) < TOL[dtype]
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b, 1e-5)
    r_new = (x.float() + res.float()).to(dtype)
    fused_add_layer_norm_(x, res, w, b, 1e-5)
    assert torch.equal(res, r_new)
    assert rel_err(x, y_ref) < TOL[dtype]
    assert launched == ["_layer_norm_welford_kernel"] * 2


def test_welford_kernel_strided_rows(device, monkeypatch):
    launched = _small_welford(monkeypatch)
    big = torch.randn(4, 1100, device=device, dtype=torch.float16)
    x = big[:, 50:1050]  # rows of 1000 with stride 1100, unaligned start
    _, res, w, b = _inputs((4, 1000), torch.float16, device)
    y, r = layer_norm(x, w, b, residual=res)
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
    assert rel_err(y, y_ref) < TOL[torch.float16] and rel_err(r, r_ref) < TOL[torch.float16]
    assert launched == ["_layer_norm_welford_kernel"]


# ---------------------------------------------------------------------------------------------
# The Gluon path (ops/norm_sm90.py): sm_90 GPUs only


def _welford_wide_off(monkeypatch):
    """The Welford kernel's wide rows switched off: their widths go to the Gluon path."""
    monkeypatch.setattr(layer_norm_mod, "WELFORD_WIDE_MAX_N", 0)


def test_gluon_path_never_on_the_cpu(device):
    x, res, w, b = _inputs((300, 32768), torch.bfloat16, "cpu")
    assert not layer_norm_mod.uses_gluon(x, None, w, b, torch.empty_like(x), None)
    assert not layer_norm_mod.uses_gluon(x, res, w, b, torch.empty_like(x), torch.empty_like(x))


@pytest.mark.gpu
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 49152), (torch.bfloat16, 32776), (torch.bfloat16, 65536),
                                      (torch.float16, 16392), (torch.float16, 40960)])  # 8192 or 4096 chunks
@pytest.mark.parametrize("rows", ["laps", "2^27 elements"])
def test_gpu_gluon_matches_reference(N, dtype, residual, rows, monkeypatch):
    """Every element of the new residual is x + residual rounded once (a buffer refilled before its last read
    shows here: run 1 of benchmarks/exp_gluon_norms.py)."""
    skip_unless_sm90()
    _welford_wide_off(monkeypatch)
    x, res, w, b = _inputs((norm_gluon_rows() if rows == "laps" else (1 << 27) // N, N), dtype, "cuda")
    if residual:
        y, r = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b, 1e-5, residual=res))
        y_ref, r_ref = add_layer_norm_reference(x, res, w, b, 1e-5)
        assert torch.equal(r, (x.float() + res.float()).to(dtype))
        assert rel_err(r, r_ref) < TOL[dtype]
    else:
        warps = []
        real = norm_sm90.norm_rows
        monkeypatch.setattr(norm_sm90, "norm_rows", lambda *a, **k: warps.append(k.get("warps")) or real(*a, **k))
        y = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b, 1e-5))
        y_ref = layer_norm_reference(x, w, b, 1e-5)
        # whole rows past GLUON_WIDE_MIN_N without a residual on wider consumers
        assert warps == [layer_norm_mod.GLUON_WIDE_WARPS if N > layer_norm_mod.GLUON_WIDE_MIN_N else None]
    assert y.dtype == dtype and rel_err(y, y_ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("params", ["no weight", "no bias", "neither", "fp32 weight and bias"])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("N", [32776, 65536])  # 4096-element chunks; 8192 but with fp32 parameters
def test_gpu_gluon_optional_and_fp32_params(params, residual, N, monkeypatch):
    skip_unless_sm90()
    _welford_wide_off(monkeypatch)
    x, res, w, b = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda",
                           param_dtype=torch.float32 if "fp32" in params else None)
    w = None if params in ("no weight", "neither") else w
    b = None if params in ("no bias", "neither") else b
    if residual:
        y, _ = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b, residual=res))
        assert rel_err(y, add_layer_norm_reference(x, res, w, b)[0]) < TOL[torch.bfloat16]
    else:
        y = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b))
        assert rel_err(y, layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("N", [32776, 65536])
def test_gpu_gluon_large_mean(N, monkeypatch):
    """Rows 1e4 + 64 randn in bf16 (values 64 apart): the statistics keep the spread; and the same rows as the
    residual stream; constant rows give the bias."""
    skip_unless_sm90()
    _welford_wide_off(monkeypatch)
    x, res, w, b = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda")
    big = (1e4 + 64 * torch.randn_like(x, dtype=torch.float32)).to(torch.bfloat16)
    y = run_norm_gluon(monkeypatch, lambda: layer_norm(big, w, b))
    assert rel_err(y, layer_norm_reference(big, w, b)) < TOL[torch.bfloat16]
    y, r = run_norm_gluon(monkeypatch, lambda: layer_norm((64 * x.float()).bfloat16(), w, b, residual=big))
    assert rel_err(y, layer_norm_reference(r, w, b)) < TOL[torch.bfloat16]
    const = torch.full_like(x, 1e4)
    out = run_norm_gluon(monkeypatch, lambda: layer_norm(const, w, b))
    assert rel_err(out, b.expand(x.shape)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_gluon_strided_rows(monkeypatch):
    """Row views with stride != N (TMA boxes of one row) take the Gluon path; one whose start is not 16-byte
    aligned falls back to the Triton kernels, with the same results."""
    skip_unless_sm90()
    N = 65536
    _, res, w, b = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda")
    wide = torch.randn(norm_gluon_rows(), N + 64, device="cuda", dtype=torch.bfloat16)
    x = wide[:, 8:8 + N]  # row stride N + 64, base 16 bytes in
    y, r = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b, residual=res))
    y_ref, r_ref = add_layer_norm_reference(x, res, w, b)
    assert rel_err(y, y_ref) < TOL[torch.bfloat16] and rel_err(r, r_ref) < TOL[torch.bfloat16]
    assert rel_err(run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b)), layer_norm_reference(x, w, b)) < \
        TOL[torch.bfloat16]
    unaligned = wide[:, 4:4 + N]
    assert not layer_norm_mod.uses_gluon(unaligned, None, w, b, torch.empty_like(unaligned), None)
    assert rel_err(layer_norm(unaligned, w, b), layer_norm_reference(unaligned, w, b)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("N", [32776, 65536])
def test_gpu_gluon_fused_add_in_place(N, monkeypatch):
    skip_unless_sm90()
    x, res, w, b = _inputs((norm_gluon_rows(), N), torch.bfloat16, "cuda")
    y_ref, _ = add_layer_norm_reference(x, res, w, b)
    r_new = (x.float() + res.float()).bfloat16()
    run_norm_gluon(monkeypatch, lambda: fused_add_layer_norm_(x, res, w, b))
    assert torch.equal(res, r_new)
    assert rel_err(x, y_ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("params", ["weight and bias", "neither", "fp32 weight and bias"])
@pytest.mark.parametrize("dtype, N", [(torch.bfloat16, 131072), (torch.bfloat16, 262144), (torch.float16, 196608),
                                      (torch.bfloat16, 1 << 20)])
def test_gpu_gluon_rows_in_parts(dtype, N, params, monkeypatch):
    """Rows past GLUON_MAX_N (no residual, contiguous) are split into parts (the next power of two of N / PART_MAX_N),
    each a program's, which merge their (mean, variance): each part's weight and bias columns, a row whose halves
    are centred 2e4 apart (the spread between parts), rows around 1e4; the result does not depend on which part
    arrives last and the rows' counters are left at zero."""
    skip_unless_sm90()
    from rooftop.ops._support import arrival_counters
    parts = 1 << (-(-N // layer_norm_mod.PART_MAX_N) - 1).bit_length()
    M = rows_in_parts(parts)
    x, _, w, b = _inputs((M, N), dtype, "cuda", param_dtype=torch.float32 if "fp32" in params else None)
    w, b = (None, None) if params == "neither" else (w, b)
    x[1, : N // 2] += 1e4
    x[1, N // 2:] -= 1e4
    x[2] = (1e4 + 64 * torch.randn(N, device="cuda")).to(dtype) if dtype == torch.bfloat16 else x[2] + 100
    x[3] = 0  # parts of mean 0 and variance 0: a pair of zeros through swap_pairs
    assert layer_norm_mod.gluon_parts(x, None, w, b, torch.empty_like(x), None) == parts
    y = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b))
    assert rel_err(y, layer_norm_reference(x, w, b)) < TOL[dtype]
    assert rel_err(y[1], layer_norm_reference(x[1:2], w, b)[0]) < TOL[dtype]
    assert torch.equal(y, layer_norm(x, w, b))
    assert not arrival_counters(x.device, M + 2 * M * parts + 4).any()  # counters and swap_pairs' words


@pytest.mark.gpu
@pytest.mark.parametrize("params", ["weight and bias", "weight", "bias"])
@pytest.mark.parametrize("dtype, N, parts", [(torch.bfloat16, 32768, 1), (torch.float16, 32776, 1),
                                             (torch.bfloat16, 65536, 2), (torch.bfloat16, 98304, 4)])
def test_gpu_gluon_resident_params(dtype, N, parts, params, monkeypatch):
    """The Gluon kernel with its weight and bias kept in shared memory (norm_sm90.RESIDENT_PARAMS), called directly:
    whole rows (whole chunks and not) and parts, each program its part's columns; rows centred 2e4 apart by halves
    and around 1e4."""
    skip_unless_sm90()
    from rooftop.ops.softmax_sm90 import part_views
    monkeypatch.setattr(norm_sm90, "RESIDENT_PARAMS", True)
    monkeypatch.setattr(norm_sm90, "RESIDENT_ROWS", 1)  # kept wherever x's ring holds a row: every case here
    M = rows_in_parts(parts) if parts > 1 else norm_gluon_rows()
    x, _, w, b = _inputs((M, N), dtype, "cuda")
    w, b = (w if "weight" in params else None), (b if "bias" in params else None)
    x[1, : N // 2] += 1e4
    x[1, N // 2:] -= 1e4
    x[2] = x[2] + 100 if dtype == torch.float16 else (1e4 + 64 * torch.randn(N, device="cuda")).to(dtype)
    y = torch.empty_like(x)
    part_x = part_views(parts, x)[0] if parts > 1 else x
    chunk, buffers, _ = norm_sm90.config(part_x, None, w, b, True)
    assert norm_sm90.resident_params(w, b, -(-part_x.shape[1] // chunk), buffers) == (w is not None, b is not None)
    norm_sm90.norm_rows(x, None, w, b, y, None, 1e-5, 0.0, True, torch.cuda.get_device_properties(0)
                        .multi_processor_count, parts=parts)
    assert rel_err(y, layer_norm_reference(x, w, b)) < TOL[dtype]
    assert rel_err(y[1], layer_norm_reference(x[1:2], w, b)[0]) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("weight_dtype", [torch.bfloat16, torch.float32])
def test_gpu_gluon_one_param_kept(weight_dtype, monkeypatch):
    """Rows in parts of 4 chunks (131072 in parts of 32768; both parameters kept would leave x's ring 6 buffers) keep
    one of the weight and bias in shared memory (RESIDENT_ONE) and read the other from L2: the weight, or the bias
    where the weight is fp32 (then in 4096-element chunks)."""
    skip_unless_sm90()
    from rooftop.ops.softmax_sm90 import part_views
    monkeypatch.setattr(norm_sm90, "RESIDENT_ONE", True)
    N, parts = 131072, 4
    x, _, w, b = _inputs((rows_in_parts(parts), N), torch.bfloat16, "cuda")
    w = w.to(weight_dtype)
    x[1, : N // 2] += 1e4
    part_x = part_views(parts, x)[0]
    chunk, buffers, _ = norm_sm90.config(part_x, None, w, b, True)
    fp32 = weight_dtype == torch.float32
    assert norm_sm90.resident_params(w, b, -(-part_x.shape[1] // chunk), buffers) == (not fp32, fp32)
    y = run_norm_gluon(monkeypatch, lambda: layer_norm(x, w, b))
    assert rel_err(y, layer_norm_reference(x, w, b)) < TOL[torch.bfloat16]
    assert rel_err(y[1], layer_norm_reference(x[1:2], w, b)[0]) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_gluon_dispatch(monkeypatch):
    """The Gluon path takes 16-bit rows of GLUON_MIN_N < N <= GLUON_MAX_N (N a multiple of 8; with a residual
    not TRITON_RES_N) with at least 2 rows per SM and 16-byte aligned parameters, and nothing else; GLUON_ENABLED
    switches it off."""
    skip_unless_sm90()
    M = 2 * torch.cuda.get_device_properties(0).multi_processor_count

    def takes(shape, dtype=torch.bfloat16, residual=False, bias_offset=0):
        x = torch.empty(shape, device="cuda", dtype=dtype)
        w = torch.empty(shape[1], device="cuda", dtype=dtype)
        b = torch.empty(shape[1] + bias_offset, device="cuda", dtype=dtype)[bias_offset:]
        r = torch.empty_like(x) if residual else None
        return layer_norm_mod.uses_gluon(x, torch.empty_like(x) if residual else None, w, b, torch.empty_like(x), r)

    assert not takes((M, 32768)) and not takes((M, 40960)) and not takes((M, 16392), torch.float16)  # the Welford
    # kernel's wide rows
    _welford_wide_off(monkeypatch)
    assert takes((M, 32768)) and takes((M, 16392), torch.float16) and takes((M, 65536), residual=True)
    assert not takes((M, 32768), residual=True) and takes((M, 32776), residual=True)  # TRITON_RES_N: Triton's
    assert not takes((M, 16384))  # the on-chip kernel's
    assert not takes((M, 65536 + 8))  # past GLUON_MAX_N, not a multiple of 8 * 2: not in parts
    assert takes((M, 131072)) and takes((M, 131072), residual=True)  # in parts (a residual: past PARTS_RESIDUAL_MIN_N)
    assert not takes((M // (131072 // layer_norm_mod.PART_MAX_N) - 1, 131072))  # fewer than 2 rows of parts per SM
    assert not takes((M, 32772))  # N not a multiple of 8: no TMA descriptor
    assert not takes((M, 32768), torch.float32)
    assert not takes((M - 1, 32768))  # fewer than 2 rows per SM
    assert not takes((M, 32768), bias_offset=1)  # a bias not 16-byte aligned
    monkeypatch.setattr(layer_norm_mod, "GLUON_ENABLED", False)
    assert not takes((M, 32768))
