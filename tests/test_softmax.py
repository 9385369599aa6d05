import pytest
import torch

import rooftop
from rooftop.ops.softmax import softmax_reference
from conftest import TOL, rel_err

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# widths cover: 1, odd, prime, non-power-of-two, the widest on-chip row (65536), the looped path
# (M >= SMs) and the split path (few rows; the interpreter pretends to have 8 SMs), up to 1M
SHAPES = [(1, 1), (1, 7), (3, 33), (5, 1000), (17, 4097), (2, 65536), (8, 40960), (9, 65537), (3, 100003), (1, 1 << 20)]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape, dtype, log, device):
    x = torch.randn(shape, device=device, dtype=dtype) * 4
    out = (rooftop.log_softmax if log else rooftop.softmax)(x)
    assert out.shape == x.shape and out.dtype == dtype
    assert rel_err(out, softmax_reference(x, -1, log)) < TOL[dtype]


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_any_dim_and_leading_shape(dim, device):
    x = torch.randn(4, 5, 129, device=device, dtype=torch.float32)
    assert rel_err(rooftop.softmax(x, dim), softmax_reference(x, dim)) < 1e-5


def test_non_contiguous_rows(device):
    wide = torch.randn(6, 3000, device=device, dtype=torch.bfloat16)
    x = wide[:, 7:2007]  # row stride 3000 != width 2000, unaligned start
    assert x.stride(0) != x.shape[1]
    assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[torch.bfloat16]
    xt = torch.randn(300, 8, device=device).t()  # column stride != 1
    assert rel_err(rooftop.log_softmax(xt), softmax_reference(xt, -1, True)) < 1e-5


@pytest.mark.parametrize("width", [5, 65536, 70001])  # on-chip, split with whole tiles, split
def test_special_values_follow_torch(width, device):
    inf, nan = float("inf"), float("nan")
    x = torch.randn(5, width, device=device)
    x[0, :] = -inf  # all -inf: nan
    x[1, 3] = nan  # a nan: the whole row nan
    x[2, 4] = inf  # +inf: the whole row nan
    x[3, : width // 2 + 1] = -inf  # a finite row with -inf entries: 0 there (-inf for log)
    for log in (False, True):
        out = (rooftop.log_softmax if log else rooftop.softmax)(x)
        ref = torch.log_softmax(x.double().cpu(), -1) if log else torch.softmax(x.double().cpu(), -1)
        assert torch.equal(torch.isnan(out.cpu()), torch.isnan(ref))
        finite = torch.isfinite(ref)
        assert torch.equal(torch.isfinite(out.cpu()), finite)
        assert torch.allclose(out.cpu().double()[finite], ref[finite], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0,)])
def test_empty(shape, device):
    x = torch.randn(shape, device=device)
    assert rooftop.softmax(x).shape == x.shape


def test_bad_input(device):
    with pytest.raises(TypeError, match="x has dtype int32"):
        rooftop.softmax(torch.ones(3, 4, dtype=torch.int32, device=device))
    with pytest.raises(IndexError, match="dim=2"):
        rooftop.softmax(torch.randn(3, 4, device=device), dim=2)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        rooftop.softmax([1.0, 2.0])
    with pytest.raises(ValueError, match="at least one dimension"):
        rooftop.softmax(torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="requires grad"):
        rooftop.softmax(torch.randn(3, 4, device=device, requires_grad=True))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(4096, 32768), (512, 262144), (64, 128256), (1, 1 << 20), (3, 1 << 20)])
def test_gpu_sizes(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
    assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[torch.bfloat16]


@pytest.mark.slow
def test_past_2_31_elements():
    x = torch.randn(2**31 // 4096 + 3, 4096, device="cuda", dtype=torch.bfloat16)
    out = rooftop.softmax(x)
    tail = slice(x.shape[0] - 4, None)  # the rows past 2^31 elements
    assert rel_err(out[tail], softmax_reference(x[tail])) < TOL[torch.bfloat16]
    assert rel_err(out[:4], softmax_reference(x[:4])) < TOL[torch.bfloat16]
