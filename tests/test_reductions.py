import math

import pytest
import torch

from conftest import HAS_CUDA, TOL, rel_err
from rooftop import registry
from rooftop.ops import reductions
from rooftop.ops._support import num_sms
from rooftop.ops.reductions import (reduce_path, row_argmax, row_max, row_mean, row_norm, row_reduce_reference,
                                   row_sum)

FNS = {"sum": row_sum, "max": row_max, "mean": row_mean, "norm": row_norm}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# 1 element, odd, prime, the widest on-chip row among few, past it with few rows and one long row (split path
# here and on the GPU), past the widest on-chip row among many with enough rows for the looped path in the
# interpreter (8 "SMs")
SHAPES = [(1, 1), (3, 7), (5, 1000), (2, 32768), (3, 40000), (1, 300000), (17, 65537)]
SMS = num_sms(0 if HAS_CUDA else -1)


def _onchip_up_to(n, monkeypatch):
    """Rows past n columns off chip, few or many, argmax's too (the looped and split paths on small rows)."""
    for name in ("ONCHIP_MAX", "ONCHIP_MANY_MAX", "ARGMAX_ONCHIP_MAX"):
        monkeypatch.setattr(reductions, name, n)


def _rand(shape, dtype, device):
    # offset so that no long row sums to nearly 0 (a relative check would then measure only rounding),
    # small enough that sums of 300000 stay inside float16's range
    return torch.randn(shape, device=device, dtype=dtype) + 0.1


def _check(kind, x, out_dtype=None):
    out = FNS[kind](x, out_dtype=out_dtype)
    dtype = out_dtype or x.dtype
    assert out.dtype == dtype and out.shape == x.shape[:-1] and out.device == x.device
    assert rel_err(out, row_reduce_reference(x, kind)) < TOL[dtype], kind
    return out


@pytest.mark.parametrize("kind", FNS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape, dtype, kind, device):
    _check(kind, _rand(shape, dtype, device))


@pytest.mark.parametrize("kind", FNS)
def test_wide_rows_on_chip_one_program_an_sm(kind, device, monkeypatch):
    """Rows on chip past ONCHIP_ONE_PROGRAM_MIN_N launch one program an SM (maxnreg=64), narrower ones not: on the GPU
    at its widths among as many rows as keep them on chip, in the interpreter with the bound moved down."""
    launches = []
    real = reductions.launch
    monkeypatch.setattr(reductions, "launch", lambda kernel, *a, **k: launches.append(k.get("maxnreg")) or
                        real(kernel, *a, **k))
    if HAS_CUDA:
        wide, narrow = (2 * reductions.PROGRAMS_PER_SM * SMS, 49152), (2 * reductions.PROGRAMS_PER_SM * SMS, 40960)
    else:
        monkeypatch.setattr(reductions, "ONCHIP_ONE_PROGRAM_MIN_N", 512)
        wide, narrow = (20, 1000), (20, 512)
    for shape, maxnreg in ((wide, 64), (narrow, None)):
        assert reduce_path(*shape, SMS) == "onchip"
        _check(kind, _rand(shape, torch.bfloat16, device))
        assert launches.pop() == maxnreg


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES + [(1, 128256)])
def test_argmax_matches_torch(shape, dtype, device):
    """torch.argmax's index exactly, on fresh normal rows and on rows of 5 values (ties everywhere: the first
    maximum); (1, 128256): greedy decoding over Llama 3's vocabulary."""
    for x in (_rand(shape, dtype, device), torch.randint(-2, 3, shape, device=device).to(dtype)):
        out = row_argmax(x)
        assert out.dtype == torch.int64 and out.shape == x.shape[:-1]
        assert torch.equal(out, x.argmax(-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("path", ["onchip", "split", "looped"])
def test_argmax_special_values(path, dtype, monkeypatch, device):
    """torch.argmax's index where the order is not plain: -0.0 equals 0.0 (the first wins), a NaN of either sign
    above +inf (the first NaN found by a second pass), a row all -inf; on chip, and in tiles of 128 elements split
    into pieces or looped over (the 6 rows repeated past the split path's few rows)."""
    if path != "onchip":
        _onchip_up_to(64, monkeypatch)
        monkeypatch.setattr(reductions, "ARGMAX_LOOPED_TILE_BYTES", 128 * torch.tensor([], dtype=dtype).element_size())
    x = torch.randn(6, 500, device=device).to(dtype)
    reps = 2 * SMS // 6 + 1 if path == "looped" else 1
    assert reduce_path(6 * reps, 500, SMS) == path
    x[0] = float("-inf")
    x[1, 3], x[1, 77], x[1, 400] = float("inf"), float("nan"), float("nan")
    x[2] = -1.0
    x[2, 5], x[2, 9] = -0.0, 0.0
    x[3] = -3.0
    x[3, 100], x[3, 300], x[3, 450] = 0.0, -0.0, -float("nan")
    x[4] = -float("nan")
    x[4, 0] = float("inf")
    x = x.repeat(reps, 1)
    out = row_argmax(x)
    assert out.tolist()[:6] == [0, 77, 5, 450, 1, x[5].float().argmax().item()]
    assert torch.equal(out, x.argmax(-1))


def test_paths(monkeypatch):
    onchip_max, split_max_rows = reductions.ONCHIP_MAX, reductions.PROGRAMS_PER_SM * SMS // 2
    pieces_min = reductions.PIECES_MIN_N
    assert reduce_path(1, onchip_max, SMS) == reduce_path(split_max_rows + 1, pieces_min, SMS) == "onchip"
    assert reduce_path(1, onchip_max + 1, SMS) == reduce_path(split_max_rows, 1 << 20, SMS) == "split"
    assert reduce_path(split_max_rows + 1, pieces_min + 1, SMS) == reduce_path(10**6, 1 << 20, SMS) == "pieces"
    assert reduce_path(split_max_rows + 1, 1 << 20, SMS, "argmax") == "looped"
    monkeypatch.setattr(reductions, "PIECES_MIN_N", 1 << 40)  # the Triton kernels that pieces replace
    many_max = reductions.ONCHIP_MANY_MAX
    assert reduce_path(split_max_rows + 1, many_max, SMS) == "onchip"
    assert reduce_path(split_max_rows + 1, many_max + 1, SMS) == "looped"
    # argmax: rows past ARGMAX_ONCHIP_MAX on chip only where few
    wide = reductions.ARGMAX_ONCHIP_MAX + 1
    assert reduce_path(split_max_rows, onchip_max, SMS, "argmax") == reduce_path(10**6, wide - 1, SMS,
                                                                                "argmax") == "onchip"
    assert reduce_path(split_max_rows + 1, wide, SMS, "argmax") == "looped"
    monkeypatch.undo()
    # the shapes above reach every path here
    paths = {reduce_path(m, n, SMS) for m, n in SHAPES}
    assert paths == ({"onchip", "split", "pieces"} if not HAS_CUDA else {"onchip", "split"})


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("path", ["onchip", "looped", "split", "pieces"])
def test_every_path_with_small_tiles(path, dtype, monkeypatch, device):
    """Every path on every device, with tiles of 128 (bf16) / 64 (fp32) elements: rows of 7 / 13 tiles
    (odd: the loop is unrolled by two), the last one partial; pieces of at most 128 / 256 elements (7 / 4 a row).
    Row 0 holds a NaN in its last tile, row 1 is all -inf, row 2 holds -inf among finite values."""
    if path != "onchip":
        _onchip_up_to(64, monkeypatch)
    monkeypatch.setattr(reductions, "PIECES_MIN_N", 64 if path == "pieces" else 1 << 40)
    monkeypatch.setattr(reductions, "PIECE_CONFIGS", {"sum": (128, 4), "sumsq": (128, 2), "max": (256, 4)})
    monkeypatch.setattr(reductions, "LOOPED_TILE_BYTES", 256)
    monkeypatch.setattr(reductions, "ARGMAX_LOOPED_TILE_BYTES", 256)
    monkeypatch.setattr(reductions, "PROGRAMS_PER_SM", 1)  # fewer rows reach the looped path
    M = SMS + 3 if path in ("looped", "pieces") else 3  # looped: programs get 2 rows, one gets 1
    N = 800
    assert reduce_path(M, N, SMS) == path
    x = _rand((M, N), dtype, device)
    for kind in FNS:
        _check(kind, x)
    x[0, N - 3] = float("nan")
    x[1] = float("-inf")
    x[2, ::3] = float("-inf")
    out = row_max(x)
    assert out[0].isnan() and out[1] == float("-inf")
    assert torch.equal(out[2:], x[2:].amax(-1))
    x[0, N - 1] = float("nan")  # a second NaN after the first
    x[2, N // 2] = x[2].amax() + 1  # a maximum past the first tile
    assert row_argmax(x).tolist()[:3] == [N - 3, 0, N // 2]
    assert torch.equal(row_argmax(x), x.argmax(-1))


@pytest.mark.parametrize("path", ["split", "pieces"])
def test_all_negative_rows(path, monkeypatch, device):
    """Rows below 0 where the parts of a row are fewer than their power of two (split: 10 chunks of 16 at 40000;
    pieces: 3 of 4 at 700): the padding holds the identity (-inf for max), not 0."""
    if path == "pieces":
        _onchip_up_to(64, monkeypatch)
        monkeypatch.setattr(reductions, "PIECES_MIN_N", 64)
        monkeypatch.setattr(reductions, "PIECE_CONFIGS", {"sum": (128, 4), "sumsq": (128, 2), "max": (256, 4)})
        monkeypatch.setattr(reductions, "PROGRAMS_PER_SM", 1)
    M, N = (3, 40000) if path == "split" else (SMS + 3, 700)
    assert reduce_path(M, N, SMS, "max") == path
    x = _rand((M, N), torch.float32, device) - 100
    assert torch.equal(row_max(x), x.amax(-1)) and torch.equal(row_argmax(x), x.argmax(-1))  # argmax: split / looped


def test_fp32_output_from_bf16(device):
    x = _rand((4, 3000), torch.bfloat16, device)
    for kind in FNS:
        out = _check(kind, x, out_dtype=torch.float32)
        # exact inputs, fp32 accumulation: far inside the bf16 tolerance
        assert rel_err(out, row_reduce_reference(x, kind)) < 1e-5


def test_leading_dims_and_strides(device):
    big = _rand((2, 3, 1100), torch.float16, device)
    x = big[..., 50:1050]  # rows of 1000 with stride 1100, unaligned start: read in place
    columns = _rand((1000, 5), torch.bfloat16, device).t()  # unit row stride: copied to rows first
    vector = _rand((777,), torch.float32, device)
    for kind in FNS:
        assert _check(kind, x).shape == (2, 3)
        _check(kind, columns)
        assert _check(kind, vector).shape == ()
    for t in (x, columns, vector):
        assert torch.equal(row_argmax(t), t.argmax(-1))


def test_empty(device):
    for kind in FNS:
        assert FNS[kind](torch.randn(0, 64, device=device)).shape == (0,)
        assert FNS[kind](torch.randn(2, 0, 64, device=device, dtype=torch.bfloat16)).shape == (2, 0)
    assert row_argmax(torch.randn(2, 0, 64, device=device)).shape == (2, 0)
    empty_rows = torch.randn(3, 0, device=device)
    assert torch.equal(row_sum(empty_rows), torch.zeros(3, device=device))
    assert torch.equal(row_norm(empty_rows), torch.zeros(3, device=device))
    assert row_mean(empty_rows).isnan().all()  # as torch: 0 / 0


def test_bad_input(device):
    x = torch.randn(4, 64, device=device)
    with pytest.raises(TypeError, match="x has dtype int64"):
        row_sum(torch.ones(4, 64, dtype=torch.int64, device=device))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        row_max([1.0, 2.0])
    with pytest.raises(TypeError, match="out_dtype must be one of"):
        row_mean(x, out_dtype=torch.int32)
    with pytest.raises(ValueError, match="x must have at least one dimension"):
        row_norm(torch.tensor(1.0, device=device))
    with pytest.raises(ValueError, match="x has an empty last dim"):
        row_max(torch.randn(3, 0, device=device))
    with pytest.raises(ValueError, match="x has an empty last dim .* the argmax"):
        row_argmax(torch.randn(3, 0, device=device))
    with pytest.raises(TypeError, match="x has dtype int64"):
        row_argmax(torch.ones(4, 64, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match="x requires grad"):
        row_sum(x.requires_grad_())


def test_registry():
    for kind in FNS:
        spec = registry.get(f"row_{kind}")
        assert spec.family == "reductions" and spec.cases == registry.row_sweep()
        cost = spec.cost((512, 4096), torch.bfloat16)
        assert cost.bytes == 512 * 4096 * 2 + 512 * 2
        (x,) = spec.make_inputs((3, 100), torch.float32, "cpu")
        assert rel_err(spec.eager(x), spec.reference(x)) < TOL[torch.float32]
    argmax = registry.get("row_argmax")
    assert argmax.cost((512, 4096), torch.bfloat16).bytes == 512 * 4096 * 2 + 512 * 8  # int64 indices
    (x,) = argmax.make_inputs((3, 100), torch.float32, "cpu")
    assert torch.equal(argmax.eager(x), argmax.reference(x))
    assert hasattr(torch.ops.rooftop, "row_reduce")


@pytest.mark.parametrize("shape", [(4, 96), (2, 3, 1000)])
def test_compiles_without_graph_break(shape):
    from torch._dynamo.testing import CompileCounterWithBackend

    def stats(x):
        return row_sum(x), row_max(x), row_mean(x, out_dtype=torch.float32), row_norm(x) * 2.0, row_argmax(x) + 1

    x = _rand(shape, torch.float16, "cuda" if HAS_CUDA else "cpu")
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    total, top, mean, twice_norm, argmax_1 = torch.compile(stats, backend=counter, fullgraph=True)(x)
    assert counter.frame_count == 1
    assert torch.equal(argmax_1, x.argmax(-1) + 1)
    assert rel_err(total, row_reduce_reference(x, "sum")) < TOL[torch.float16]
    assert rel_err(top, row_reduce_reference(x, "max")) == 0
    assert mean.dtype == torch.float32 and rel_err(mean, row_reduce_reference(x, "mean")) < TOL[torch.float32]
    assert rel_err(twice_norm, 2 * row_reduce_reference(x, "norm")) < TOL[torch.float16]


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1 << 20), (7, 1 << 20), (64, 1 << 20), (128, 1 << 20), (512, 262144),
                                   (2048, 65536), (4096, 32768), (262144, 512), (300, 100003)])
def test_gpu_sizes(shape):
    x = _rand(shape, torch.bfloat16, "cuda")
    for kind in FNS:
        _check(kind, x)
        _check(kind, x, out_dtype=torch.float32)
    assert torch.equal(row_argmax(x), x.argmax(-1))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2**31 // 8192 + 3, 8192), (300, 2**23 + 1), (2, 2**30 + 5)])
def test_past_2_31_elements(shape):
    """Each path (onchip, looped, split on the H200) over a tensor past 2^31 elements: the last rows."""
    assert math.prod(shape) > 2**31
    x = _rand(shape, torch.bfloat16, "cuda")
    tail = slice(shape[0] - 2, None)
    for kind in FNS:
        out = FNS[kind](x)
        assert rel_err(out[tail], row_reduce_reference(x[tail], kind)) < TOL[torch.bfloat16]
    assert torch.equal(row_argmax(x)[tail], x[tail].argmax(-1))
