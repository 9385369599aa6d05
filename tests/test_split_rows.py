"""The split paths of the norms for wide rows (rows over programs that wait for each other): add + RMSNorm,
and RMSNorm / LayerNorm without a residual (the split-words kernels). On a GPU: more rows than SMs, a ragged last
chunk, in place, quantized, and the arrival counters left at zero for the next launch. The interpreter runs
programs one after another, so there the split-words kernels run rows of one chunk (the chunk made wide)."""
import pytest
import torch
import triton
import triton.language as tl

import rooftop
from rooftop.ops import _support
from rooftop.ops import layer_norm as layer_norm_mod
from rooftop.ops import rms_norm as rms_norm_mod
from rooftop.ops.layer_norm import add_layer_norm_reference, layer_norm_reference
from rooftop.ops.rms_norm import add_rms_norm_reference, rms_norm_reference
from conftest import DEVICE, HAS_CUDA, TOL, rel_err, rows_in_parts, run_norm_gluon, skip_unless_sm90, spy_launches

WIDTH = 65536 + 8193  # past the split threshold, the last chunk ragged


def _dequantized(q, scale):
    return q.float() * scale.reshape(q.shape[0], 1)


def _calls(x, res, w):
    def in_place():
        xc, rc = x.clone(), res.clone()
        rooftop.fused_add_rms_norm_(xc, rc, w)
        return xc

    return {
        "add_rms_norm": (lambda: rooftop.rms_norm(x, w, residual=res)[0], lambda: add_rms_norm_reference(x, res, w)[0]),
        "new_residual": (lambda: rooftop.rms_norm(x, w, residual=res)[1], lambda: add_rms_norm_reference(x, res, w)[1]),
        "in_place": (in_place, lambda: add_rms_norm_reference(x, res, w)[0]),
        "add_rms_norm_fp8": (lambda: _dequantized(*rooftop.rms_norm(x, w, residual=res, quant="fp8")[:2]),
                             lambda: add_rms_norm_reference(x, res, w)[0]),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["add_rms_norm", "new_residual", "in_place", "add_rms_norm_fp8"])
def test_many_rows_match_reference_and_reset_counters(op):
    rows = 2 * torch.cuda.get_device_properties(0).multi_processor_count + 5
    x = torch.randn(rows, WIDTH, device="cuda", dtype=torch.bfloat16)
    res = torch.randn_like(x)
    w = torch.rand(WIDTH, device="cuda", dtype=torch.bfloat16) + 0.5
    call, ref = _calls(x, res, w)[op]
    expected = ref()
    tol = 0.07 if op == "add_rms_norm_fp8" else TOL[torch.bfloat16]  # e4m3: 3 mantissa bits
    for _ in range(2):  # the second launch relies on the first leaving its counters at zero
        assert rel_err(call(), expected) < tol
        torch.cuda.synchronize()
        counters = _support.arrival_counters(x.device, rows)
        assert int(counters.count_nonzero()) == 0


def _split_words_calls(x, res, w, b):
    """(rooftop call, float64 reference, kernel) of each op the split-words kernels serve: y, or (y, r) with a
    residual (the in-place forms return (x, residual) after the call), whose y normalises r = x + residual as
    stored (rounded to x's dtype)."""
    rms, ln = "_rms_norm_split_words_kernel", "_layer_norm_split_words_kernel"

    def in_place(fn):
        def call():
            xc, rc = x.clone(), res.clone()
            fn(xc, rc)
            return xc, rc
        return call

    return {
        "rms_norm": (lambda: rooftop.rms_norm(x, w), lambda: rms_norm_reference(x, w), rms),
        "rms_norm_gemma": (lambda: rooftop.rms_norm(x, w, offset=1.0), lambda: rms_norm_reference(x, w, offset=1.0),
                           rms),
        "rms_norm_no_weight": (lambda: rooftop.rms_norm(x, None), lambda: rms_norm_reference(x, None), rms),
        "add_rms_norm": (lambda: rooftop.rms_norm(x, w, residual=res), lambda: rms_norm_reference(x + res, w), rms),
        "fused_add_rms_norm_": (in_place(lambda xc, rc: rooftop.fused_add_rms_norm_(xc, rc, w)),
                                lambda: rms_norm_reference(x + res, w), rms),
        "layer_norm": (lambda: rooftop.layer_norm(x, w, b), lambda: layer_norm_reference(x, w, b), ln),
        "layer_norm_no_params": (lambda: rooftop.layer_norm(x, None, None), lambda: layer_norm_reference(x, None, None),
                                 ln),
        "add_layer_norm": (lambda: rooftop.layer_norm(x, w, b, residual=res),
                           lambda: layer_norm_reference(x + res, w, b), ln),
        "fused_add_layer_norm_": (in_place(lambda xc, rc: rooftop.fused_add_layer_norm_(xc, rc, w, b)),
                                  lambda: layer_norm_reference(x + res, w, b), ln),
    }


SPLIT_WORDS_OPS = ["rms_norm", "rms_norm_gemma", "rms_norm_no_weight", "add_rms_norm", "fused_add_rms_norm_",
                   "layer_norm", "layer_norm_no_params", "add_layer_norm", "fused_add_layer_norm_"]


def _check_split_words(op, rows, N, dtype, mean, monkeypatch):
    """The op through its split-words kernel against the float64 reference, twice (the counters left at zero);
    with a residual the new residual stream too, bit for bit x + residual rounded. Rows centred on `mean` spread
    over many steps of the dtype there (bf16 values near 1e4 are 64 apart)."""
    spread = max(1.0, 16 * mean * torch.finfo(dtype).eps) if mean else 1.0
    x = (mean + spread * torch.randn(rows, N, dtype=torch.float32)).to(dtype).to(DEVICE)
    res = torch.randn(rows, N).to(dtype).to(DEVICE)
    w = (torch.rand(N) + 0.5).to(dtype).to(DEVICE)
    b = torch.randn(N).to(dtype).to(DEVICE)
    call, ref, kernel = _split_words_calls(x, res, w, b)[op]
    module = layer_norm_mod if "layer" in op else rms_norm_mod
    monkeypatch.setattr(module, "GLUON_ENABLED", False)  # rows past the Gluon ring would go to it in parts
    launched = spy_launches(monkeypatch, module)
    expected = ref()
    for _ in range(2):
        out = call()
        if isinstance(out, tuple):
            assert torch.equal(out[1], x + res)
            out = out[0]
        assert rel_err(out, expected) < TOL[dtype]
    assert launched == [kernel] * 2
    if HAS_CUDA:
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(x.device, rows).count_nonzero()) == 0


@pytest.mark.parametrize("op", SPLIT_WORDS_OPS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("N", [3000, 4096])
def test_split_words_one_chunk(op, dtype, N, monkeypatch):
    """A row of one chunk (the interpreter's case; on a GPU too): whole and ragged chunks, rows centred on 0 and,
    for LayerNorm, on 1e4 (bf16 values there are 64 apart: the chunk's own mean keeps the spread)."""
    for module in (rms_norm_mod, layer_norm_mod):
        monkeypatch.setattr(module, "SPLIT_MIN_N", 2048)
        monkeypatch.setattr(module, "SPLIT_WORDS_LAUNCH", dict(CHUNK=4096, num_warps=4))
        monkeypatch.setattr(module, "GLUON_ENABLED", False)
        monkeypatch.setattr(module, "ONCHIP_MAX", 1024)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_MAX_N", rms_norm_mod.RELOAD_MIN_N)
    monkeypatch.setattr(layer_norm_mod, "WELFORD_MAX_N", layer_norm_mod.WELFORD_MIN_N)
    _check_split_words(op, 3, N, dtype, 0.0, monkeypatch)
    if op in ("layer_norm", "add_layer_norm"):
        _check_split_words(op, 3, N, dtype, 1e4 if dtype == torch.bfloat16 else 1e2, monkeypatch)


@pytest.mark.parametrize("op", ["add_rms_norm", "new_residual", "in_place", "add_rms_norm_fp8", "add_rms_norm_int8"])
def test_split_kernel_one_chunk(op, monkeypatch):
    """add + RMSNorm's split kernel (rows with a residual that the split-words kernel does not take: quantized ones)
    on rows of one ragged chunk (the interpreter's case; on a GPU too), twice (the counters left at zero)."""
    monkeypatch.setattr(rms_norm_mod, "SPLIT_MIN_N", 2048)
    monkeypatch.setattr(rms_norm_mod, "SPLIT_LAUNCH", dict(CHUNK=4096, num_warps=4))
    monkeypatch.setattr(rms_norm_mod, "SPLIT_WORDS_RESIDUAL", False)
    monkeypatch.setattr(rms_norm_mod, "GLUON_ENABLED", False)
    monkeypatch.setattr(rms_norm_mod, "ONCHIP_MAX", 1024)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_MAX_N", rms_norm_mod.RELOAD_MIN_N)
    x = torch.randn(3, 3000, device=DEVICE, dtype=torch.bfloat16)
    res = torch.randn_like(x)
    w = torch.rand(3000, device=DEVICE, dtype=torch.bfloat16) + 0.5
    calls = _calls(x, res, w)
    calls["add_rms_norm_int8"] = (lambda: _dequantized(*rooftop.rms_norm(x, w, residual=res, quant="int8")[:2]),
                                  lambda: add_rms_norm_reference(x, res, w)[0])
    call, ref = calls[op]
    launched = spy_launches(monkeypatch, rms_norm_mod)
    for _ in range(2):
        assert rel_err(call(), ref()) < (0.07 if op == "add_rms_norm_fp8" else TOL[torch.bfloat16])  # e4m3: 3 bits
    assert launched == ["_rms_norm_split_kernel"] * 2
    if HAS_CUDA:
        torch.cuda.synchronize()
        assert int(_support.arrival_counters(x.device, 3).count_nonzero()) == 0


def test_split_words_takes_only_what_it_can():
    """16-bit rows of even width and stride, rows and parameters of one dtype and 4-byte aligned: else no chunks."""
    x = torch.zeros(2, 4096, dtype=torch.bfloat16, device=DEVICE)
    w = torch.ones(4096, dtype=torch.bfloat16, device=DEVICE)
    y = torch.empty_like(x)
    assert _support.split_words_chunks([x, y, None, None], [w, None], 4096) == 1
    assert _support.split_words_chunks([x, y, x, y], [w], 4096) == 1
    assert _support.split_words_chunks([x.float(), y.float()], [w], 4096) == 0  # not 16-bit
    assert _support.split_words_chunks([x, y], [w.float()], 4096) == 0  # a weight of another dtype
    assert _support.split_words_chunks([x, y, x.half(), y], [w], 4096) == 0  # a residual of another dtype
    assert _support.split_words_chunks([x[:, 1:], y[:, 1:]], [w], 4096) == 0  # odd width, misaligned
    odd_stride = torch.zeros(2, 4097, dtype=torch.bfloat16, device=DEVICE)[:, :4096]  # aligned base, stride 4097
    assert _support.split_words_chunks([odd_stride, y], [w], 4096) == 0
    wide = torch.zeros(2, 4098, dtype=torch.bfloat16, device=DEVICE)
    assert _support.split_words_chunks([x, y, wide[:, 1:4097]], [w], 4096) == 0  # a residual misaligned
    assert _support.split_words_chunks([x, y], [torch.ones(4097, dtype=torch.bfloat16, device=DEVICE)[1:]], 4096) == 0
    if not HAS_CUDA:
        assert _support.split_words_chunks([x, y], [w], 1024) == 0  # several chunks: GPUs only


@triton.jit
def _swap_without_wait(words_ptr, row, chunk, a, b, fill_a: tl.constexpr, fill_b: tl.constexpr, G,
                       G_POW2: tl.constexpr):
    """_support.swap_row_stats without the wait (the interpreter runs programs one after another): publish, then
    read whatever the row's chunks have published so far."""
    base = words_ptr + tl.cast(row, tl.int64) * G
    tl.store(base + chunk, _support.pair_word(a, b))
    g = tl.arange(0, G_POW2)
    return _support.pair_values(tl.load(base + g, mask=g < G, other=0), g < G, fill_a, fill_b)


@triton.jit
def _stay(words_ptr, cnt_ptr, row, G, G_POW2: tl.constexpr):
    """_support.leave_row that leaves the words as they are (for the next call to read)."""
    pass


@pytest.mark.skipif(HAS_CUDA, reason="the GPU runs the real exchange: test_split_words_many_rows_and_chunks")
@pytest.mark.parametrize("op", SPLIT_WORDS_OPS)
def test_split_words_chunks_merge_in_the_interpreter(op, monkeypatch):
    """Rows of several chunks off a GPU: the exchange without its wait, over one workspace kept across two calls,
    so that the second call's programs read every chunk's statistics (the first's, the same values): the merges
    of counts, means and sums over G > 1 chunks, a ragged last chunk (its second half empty) and G_POW2 > G."""
    kept = {}

    def kept_words(device, M, chunks):
        if "words" not in kept:
            kept["words"] = torch.zeros(M * chunks, dtype=torch.int64)
        return kept["words"], torch.zeros(M, dtype=torch.int32)

    for module in (rms_norm_mod, layer_norm_mod):
        monkeypatch.setattr(module, "SPLIT_MIN_N", 64)
        monkeypatch.setattr(module, "SPLIT_WORDS_LAUNCH", dict(CHUNK=128, num_warps=1))
        monkeypatch.setattr(module, "GLUON_ENABLED", False)
        monkeypatch.setattr(module, "ONCHIP_MAX", 32)
        monkeypatch.setattr(module, "swap_row_stats", _swap_without_wait)
        monkeypatch.setattr(module, "leave_row", _stay)
        monkeypatch.setattr(module, "exchange_words", kept_words)
    monkeypatch.setattr(rms_norm_mod, "RELOAD_MAX_N", rms_norm_mod.RELOAD_MIN_N)
    monkeypatch.setattr(layer_norm_mod, "WELFORD_MAX_N", layer_norm_mod.WELFORD_MIN_N)
    monkeypatch.setattr(_support, "split_chunks", lambda x, N, chunk: _support.cdiv(N, chunk))
    N = 5 * 128 + 50  # 6 chunks (G_POW2 8), the last of 50 values: its second half empty
    x = (3.0 + torch.randn(3, N)).to(torch.bfloat16)  # a mean the chunks' statistics must carry
    res = torch.randn(3, N).to(torch.bfloat16)
    w = (torch.rand(N) + 0.5).to(torch.bfloat16)
    b = torch.randn(N).to(torch.bfloat16)
    call, ref, kernel = _split_words_calls(x, res, w, b)[op]
    launched = spy_launches(monkeypatch, layer_norm_mod if "layer" in op else rms_norm_mod)
    call()  # publishes every chunk's statistics
    out = call()
    if isinstance(out, tuple):
        assert torch.equal(out[1], x + res)
        out = out[0]
    assert rel_err(out, ref()) < TOL[torch.bfloat16]
    assert launched == [kernel] * 2


@pytest.mark.gpu
@pytest.mark.parametrize("op", SPLIT_WORDS_OPS)
def test_split_words_many_rows_and_chunks(op, monkeypatch):
    """More rows than SMs, several chunks a row, the last ragged; LayerNorm also on rows centred on 1e4."""
    if not HAS_CUDA:
        pytest.skip("several chunks a row: GPUs only")
    rows = 2 * torch.cuda.get_device_properties(0).multi_processor_count + 5
    _check_split_words(op, rows, WIDTH + 1, torch.bfloat16, 0.0, monkeypatch)
    if op in ("layer_norm", "add_layer_norm"):
        _check_split_words(op, rows, 262144, torch.bfloat16, 1e4, monkeypatch)


def test_split_rows_switch(monkeypatch):
    """ROOFTOP_SPLIT_ROWS=0 (SPLIT_ROWS_ENABLED) leaves every split path unused."""
    x = torch.zeros(2, 4096, dtype=torch.bfloat16, device=DEVICE)
    assert _support.split_words_chunks([x, x], [], 4096) == 1
    wide = None
    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):  # the Gluon rows in parts
        from rooftop.ops import layer_norm, rms_norm, softmax
        wide = torch.zeros(2 * torch.cuda.get_device_properties(0).multi_processor_count, 131072,
                           dtype=torch.bfloat16, device="cuda")
        w = wide[0]
        assert rms_norm.gluon_parts(wide, None, w, wide, None) == 131072 // rms_norm.PART_MAX_N
        assert layer_norm.gluon_parts(wide, None, w, w, wide, None) == 131072 // layer_norm.PART_MAX_N
        parts = 131072 // softmax.PART_MAX_N
        assert softmax.gluon_parts(wide, wide, True) == softmax.gluon_parts(wide, wide, False) == parts
    monkeypatch.setattr(_support, "SPLIT_ROWS_ENABLED", False)
    assert _support.split_words_chunks([x, x], [], 4096) == 0 and _support.split_chunks(x, 4096, 4096) == 0
    if wide is not None:  # softmax's whole rows past the ring instead; the norms' split-words kernels (off too)
        assert softmax.gluon_parts(wide, wide, True) == softmax.gluon_parts(wide, wide, False) == 1
        assert not rms_norm.gluon_parts(wide, None, w, wide, None)
        assert not layer_norm.gluon_parts(wide, None, w, w, wide, None)


@pytest.mark.gpu
@pytest.mark.parametrize("layer", [False, True], ids=["rms_norm", "layer_norm"])
def test_gpu_gluon_rows_in_parts_with_residual(layer, monkeypatch):
    """With a residual, rows past norm_sm90.PARTS_RESIDUAL_MIN_N are split into parts of at most the op's PART_MAX_N
    (up to it whole rows): the new residual is x + residual rounded once, out of place and in place."""
    skip_unless_sm90()
    from rooftop.ops import norm_sm90
    N = 1 << 20
    parts = N // (layer_norm_mod if layer else rms_norm_mod).PART_MAX_N
    M = rows_in_parts(parts)
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    res = torch.randn_like(x)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    if layer:
        parts_of = lambda t, r: layer_norm_mod.gluon_parts(t, r, w[:t.shape[1]], b[:t.shape[1]], t, r)  # noqa: E731
        call = lambda: rooftop.layer_norm(x, w, b, 1e-5, residual=res)  # noqa: E731
        in_place = lambda: rooftop.fused_add_layer_norm_(x, res, w, b, 1e-5)  # noqa: E731
        y_ref = add_layer_norm_reference(x, res, w, b, 1e-5)[0]
    else:
        parts_of = lambda t, r: rms_norm_mod.gluon_parts(t, r, w[:t.shape[1]], t, r)  # noqa: E731
        call = lambda: rooftop.rms_norm(x, w, 1e-6, residual=res)  # noqa: E731
        in_place = lambda: rooftop.fused_add_rms_norm_(x, res, w, 1e-6)  # noqa: E731
        y_ref = add_rms_norm_reference(x, res, w, 1e-6)[0]
    assert parts_of(x, res) == parts
    narrow = x[:, :norm_sm90.PARTS_RESIDUAL_MIN_N].contiguous()
    assert parts_of(narrow, narrow) <= 1  # whole rows, on this kernel or another
    y, r = run_norm_gluon(monkeypatch, call)
    assert torch.equal(r, (x.float() + res.float()).bfloat16()) and rel_err(y, y_ref) < TOL[torch.bfloat16]
    run_norm_gluon(monkeypatch, in_place)
    assert torch.equal(res, r) and torch.equal(x, y)
