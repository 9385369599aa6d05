import pytest
import torch

import rooftop.ops.rope as rope
from rooftop.ops import _support
from conftest import DEVICE, HAS_CUDA, TOL, rel_err
from rooftop.ops.decode_attention import (append_kv_reference, decode_attention, decode_attention_reference,
                                          quantize_kv)
from rooftop.ops.rope import (BLOCK_ELEMS, apply_rope, apply_rope_append_kv, apply_rotary_pos_emb, rope_reference,
                              rotary_cos_sin)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _qk(B, HQ, HK, S, D, dtype, device):
    return (torch.randn(B, HQ, S, D, device=device, dtype=dtype),
            torch.randn(B, HK, S, D, device=device, dtype=dtype))


def _cos_sin(positions, rd, dtype, device):
    """HF's cos/sin at `positions` (an int tensor), in `dtype`; positions spread past 1000 so that
    the angles wrap many times."""
    return rotary_cos_sin(positions.to(device), rd, dtype=dtype)


def _check(q, k, cos, sin, dtype, **kwargs):
    q_out, k_out = apply_rope(q, k, cos, sin, **kwargs)
    q_ref, k_ref = rope_reference(q, k, cos, sin, kwargs.get("position_ids"), kwargs.get("interleaved", False),
                                  kwargs.get("rotary_dim"))
    assert q_out.shape == q.shape and k_out.shape == k.shape and q_out.dtype == k_out.dtype == q.dtype
    assert rel_err(q_out, q_ref) < TOL[dtype]
    assert rel_err(k_out, k_ref) < TOL[dtype]
    return q_out, k_out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("rotary_dim", [None, 32], ids=["full", "partial"])
def test_layouts_dtypes_partial(rotary_dim, interleaved, dtype, device):
    B, HQ, HK, S, D = 2, 4, 2, 5, 64
    q, k = _qk(B, HQ, HK, S, D, dtype, device)
    cos, sin = _cos_sin(torch.arange(S) * 300, rotary_dim or D, dtype, device)
    q_out, k_out = _check(q, k, cos, sin, dtype, interleaved=interleaved, rotary_dim=rotary_dim)
    if rotary_dim is not None:  # the pass-through dims are copied exactly
        assert torch.equal(q_out[..., rotary_dim:], q[..., rotary_dim:])
        assert torch.equal(k_out[..., rotary_dim:], k[..., rotary_dim:])


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("B, HQ, HK, S, D, rotary_dim", [
    (1, 1, 1, 1, 2, None),  # the smallest: one token, one pair
    (3, 8, 2, 7, 128, None),  # odd S, GQA
    (1, 8, 8, 3, 96, None),  # rd/2 = 48: not a power of two
    (2, 6, 3, 3, 80, 32),  # Phi-2: D = 80, rotary over 32
    (1, 40, 8, 2, 128, 64),  # more heads than one tile holds: the head loop runs twice, ragged
])
def test_shapes(B, HQ, HK, S, D, rotary_dim, interleaved, device):
    assert 40 * 128 > BLOCK_ELEMS
    q, k = _qk(B, HQ, HK, S, D, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(S) * 7 + 3, rotary_dim or D, torch.float32, device)
    _check(q, k, cos, sin, torch.float32, interleaved=interleaved, rotary_dim=rotary_dim)


def test_neox_matches_hugging_face_eager(device):
    """The kernel against HF's own python in fp32 (rotate_half, cos/sin [B, S, D])."""
    q, k = _qk(2, 4, 2, 6, 64, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(6).expand(2, 6), 64, torch.float32, device)
    q_out, k_out = apply_rope(q, k, cos, sin)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(q_out, q_hf, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_out, k_hf, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_position_ids(interleaved, dtype, device):
    B, HQ, HK, S, D = 2, 4, 2, 5, 64
    q, k = _qk(B, HQ, HK, S, D, dtype, device)
    cos, sin = _cos_sin(torch.arange(4096), D, dtype, device)  # the table [max_pos, D]
    pos_1d = torch.randint(0, 4096, (S,), device=device)
    _check(q, k, cos, sin, dtype, position_ids=pos_1d, interleaved=interleaved)
    pos_2d = torch.randint(0, 4096, (B, S), device=device, dtype=torch.int32)
    q_out, _ = _check(q, k, cos, sin, dtype, position_ids=pos_2d, interleaved=interleaved)
    # each batch really uses its own positions
    q_b1, _ = apply_rope(q[1:], k[1:], cos, sin, position_ids=pos_2d[1], interleaved=interleaved)
    assert torch.equal(q_out[1:], q_b1)
    _check(q, k, cos, sin, dtype, position_ids=pos_2d[:1], interleaved=interleaved)  # [1, S]: broadcast


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("rotary_dim", [None, 32], ids=["full", "partial"])
@pytest.mark.parametrize("table", [False, True], ids=["per_token", "position_table"])
def test_cos_one_value_a_frequency(table, rotary_dim, interleaved, device):
    """cos / sin of width rd / 2, one value a frequency: contiguous, and the every-other-column view of the pairs-
    repeated form Hugging Face's GPT-J-style models (Cohere, GLM, Helium) compute (no copy): the rotation of the full
    halves-repeated form, by apply_rope and by apply_rope_append_kv."""
    B, HQ, HK, S, D = 2, 4, 2, 5, 64
    rd = rotary_dim or D
    q, k = _qk(B, HQ, HK, S, D, torch.float32, device)
    positions = torch.arange(100) if table else torch.arange(S) * 300
    cos, sin = _cos_sin(positions, rd, torch.float32, device)
    pos = torch.tensor([[3, 50, 7, 99, 0], [1, 2, 3, 4, 5]], device=device) if table else None
    q_ref, k_ref = rope_reference(q, k, cos, sin, pos, interleaved, rotary_dim)
    pairs = [torch.stack((t[..., :rd // 2],) * 2, -1).flatten(-2) for t in (cos, sin)]  # repeat_interleave's form
    for half_cos, half_sin in ((cos[..., :rd // 2].contiguous(), sin[..., :rd // 2].contiguous()),
                               (pairs[0][..., ::2], pairs[1][..., ::2])):
        q_out, k_out = apply_rope(q, k, half_cos, half_sin, position_ids=pos, interleaved=interleaved,
                                  rotary_dim=rotary_dim)
        assert rel_err(q_out, q_ref) < TOL[torch.float32] and rel_err(k_out, k_ref) < TOL[torch.float32]
        k_cache, v_cache = torch.zeros(B, HK, 8, D, device=device), torch.zeros(B, HK, 8, D, device=device)
        lengths = torch.tensor([0, 2], device=device, dtype=torch.int32)
        q_out = apply_rope_append_kv(q, k, k, half_cos, half_sin, k_cache, v_cache, lengths, position_ids=pos,
                                     interleaved=interleaved, rotary_dim=rotary_dim)
        assert rel_err(q_out, q_ref) < TOL[torch.float32]
        assert rel_err(k_cache[0, :, :S], k_ref[0]) < TOL[torch.float32]
        assert rel_err(k_cache[1, :, 2:2 + S], k_ref[1]) < TOL[torch.float32]


def test_tables_sliced_from_wider_ones(device):
    """cos / sin [S, D] and a position table that are column slices of wider tensors (row strides past their widths):
    the kernel takes each row stride as given."""
    B, HQ, HK, S, D = 2, 4, 2, 5, 64
    q, k = _qk(B, HQ, HK, S, D, torch.float32, device)
    table_cos, table_sin = _cos_sin(torch.arange(100), D, torch.float32, device)
    cos, sin = (torch.cat([t, torch.randn_like(t)], -1)[:, :D] for t in (table_cos, table_sin))
    _check(q, k, cos[:S], sin[:S], torch.float32)
    pos = torch.tensor([[3, 50, 7, 99, 0], [1, 2, 3, 4, 5]], device=device)
    wide_pos = torch.zeros(B, 2 * S, device=device, dtype=torch.long)[:, :S]
    wide_pos.copy_(pos)
    _check(q, k, cos, sin, torch.float32, position_ids=wide_pos)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batched_cos_and_fp32_cos(dtype, device):
    B, HQ, HK, S, D = 3, 4, 1, 4, 64
    q, k = _qk(B, HQ, HK, S, D, dtype, device)
    positions = torch.randint(0, 10000, (B, S))
    cos, sin = _cos_sin(positions, D, dtype, device)  # [B, S, D]: per-sequence positions
    _check(q, k, cos, sin, dtype)
    cos32, sin32 = _cos_sin(positions, D, torch.float32, device)
    _check(q, k, cos32, sin32, dtype)
    _check(q, k, cos32[:1], sin32[:1], dtype)  # [1, S, D]: broadcast over the batch


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("rotary_dim", [None, 16], ids=["full", "partial"])
def test_in_place(rotary_dim, interleaved, device):
    q, k = _qk(2, 4, 2, 3, 32, torch.bfloat16, device)
    cos, sin = _cos_sin(torch.arange(3) + 100, rotary_dim or 32, torch.bfloat16, device)
    q_ref, k_ref = rope_reference(q, k, cos, sin, None, interleaved, rotary_dim)
    q_pass, k_pass = q[..., rotary_dim or 32:].clone(), k[..., rotary_dim or 32:].clone()
    q_ptr, k_ptr = q.data_ptr(), k.data_ptr()
    q_out, k_out = apply_rope(q, k, cos, sin, interleaved=interleaved, rotary_dim=rotary_dim, inplace=True)
    assert q_out is q and k_out is k and q.data_ptr() == q_ptr and k.data_ptr() == k_ptr
    assert rel_err(q, q_ref) < TOL[torch.bfloat16] and rel_err(k, k_ref) < TOL[torch.bfloat16]
    assert torch.equal(q[..., rotary_dim or 32:], q_pass) and torch.equal(k[..., rotary_dim or 32:], k_pass)


@pytest.mark.parametrize("inplace", [False, True])
def test_strided_views_of_fused_qkv(inplace, device):
    """q, k, v sliced from one [B, S, (Hq + 2 Hkv) * D] projection and transposed to [B, H, S, D]."""
    B, S, HQ, HK, D = 2, 5, 4, 2, 64
    qkv = torch.randn(B, S, (HQ + 2 * HK) * D, device=device, dtype=torch.float16)
    q = qkv[..., : HQ * D].view(B, S, HQ, D).transpose(1, 2)
    k = qkv[..., HQ * D: (HQ + HK) * D].view(B, S, HK, D).transpose(1, 2)
    v_before = qkv[..., (HQ + HK) * D:].clone()
    cos, sin = _cos_sin(torch.arange(S), D, torch.float16, device)
    q_ref, k_ref = rope_reference(q, k, cos, sin)
    q_out, k_out = apply_rope(q, k, cos, sin, inplace=inplace)
    assert rel_err(q_out, q_ref) < TOL[torch.float16] and rel_err(k_out, k_ref) < TOL[torch.float16]
    assert (q_out.data_ptr() == q.data_ptr()) == inplace
    assert torch.equal(qkv[..., (HQ + HK) * D:], v_before)  # v untouched
    # a dense but transposed q ([B, S, H, D] memory) keeps its layout in the output
    q_t = torch.randn(B, S, HQ, D, device=device, dtype=torch.float16).transpose(1, 2)
    out, _ = apply_rope(q_t, k, cos, sin)
    assert out.stride() == q_t.stride()
    assert rel_err(out, rope_reference(q_t, k, cos, sin)[0]) < TOL[torch.float16]


def test_plan_serves_only_calls_like_the_first(device, monkeypatch):
    """A second call like the first replays the first one's launch on its own tensors; a call that differs
    only in alignment, strides or working in place takes the full path and records its own."""
    monkeypatch.setattr(_support, "PLANS_ENABLED", True)
    misses = []
    full_path = rope.rope_launch
    monkeypatch.setattr(rope, "rope_launch", lambda *args: misses.append(args[0].shape) or full_path(*args))
    dtype = torch.bfloat16
    q, k = _qk(1, 4, 2, 6, 32, dtype, device)
    cos, sin = _cos_sin(torch.arange(6) * 5, 16, dtype, device)
    first = _check(q, k, cos, sin, dtype, rotary_dim=16)
    again = apply_rope(q, k, cos, sin, rotary_dim=16)
    assert len(misses) == 1 and torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])
    _check(*_qk(1, 4, 2, 6, 32, dtype, device), cos, sin, dtype, rotary_dim=16)  # other addresses
    assert len(misses) == 1
    shifted = torch.randn(q.numel() + 1, device=device, dtype=dtype)[1:].view(q.shape)  # not 16-byte aligned
    _check(shifted, k, cos, sin, dtype, rotary_dim=16)
    assert len(misses) == 2
    q_t = torch.randn(1, 6, 4, 32, device=device, dtype=dtype).transpose(1, 2)  # [B, S, H, D] memory
    _check(q_t, k, cos, sin, dtype, rotary_dim=16)
    assert len(misses) == 3
    q_ref, k_ref = rope_reference(q, k, cos, sin, None, False, 16)
    apply_rope(q, k, cos, sin, rotary_dim=16, inplace=True)  # in place: the pass-through dims stay
    assert len(misses) == 4 and len(apply_rope.plans) == 4
    assert rel_err(q, q_ref) < TOL[dtype] and rel_err(k, k_ref) < TOL[dtype]


def test_empty(device):
    q, k = _qk(2, 4, 2, 0, 64, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(0), 64, torch.float32, device)
    q_out, k_out = apply_rope(q, k, cos, sin)
    assert q_out.shape == (2, 4, 0, 64) and k_out.shape == (2, 2, 0, 64)
    q, k = _qk(0, 4, 2, 3, 64, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(3), 64, torch.float32, device)
    assert apply_rope(q, k, cos, sin, inplace=True)[0].shape == (0, 4, 3, 64)


def test_bad_input(device):
    q, k = _qk(2, 4, 2, 5, 64, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(5), 64, torch.float32, device)
    with pytest.raises(ValueError, match=r"cos has shape \(5, 48\)"):  # neither rotary_dim nor its half
        apply_rope(q, k, cos[:, :48], sin[:, :48])
    with pytest.raises(ValueError, match=r"cos has shape \(4, 64\)"):
        apply_rope(q, k, cos[:4], sin[:4])
    with pytest.raises(ValueError, match=r"cos has shape \(3, 5, 64\)"):
        apply_rope(q, k, cos.expand(3, 5, 64), sin.expand(3, 5, 64))
    with pytest.raises(ValueError, match=r"sin has shape \(5, 32\) but cos has \(5, 64\)"):
        apply_rope(q, k, cos, sin[:, :32])
    with pytest.raises(ValueError, match="rotary_dim must be even"):
        apply_rope(q, k, cos[:, :31], sin[:, :31], rotary_dim=31)
    with pytest.raises(ValueError, match=r"rotary_dim must be even and in \[2, D=64\], got 66"):
        apply_rope(q, k, cos, sin, rotary_dim=66)
    with pytest.raises(TypeError, match="rotary_dim must be an int"):
        apply_rope(q, k, cos, sin, rotary_dim=64.0)
    with pytest.raises(TypeError, match="q has dtype int64"):
        apply_rope(q.long(), k, cos, sin)
    with pytest.raises(TypeError, match="k has dtype torch.float16 but q has torch.float32"):
        apply_rope(q, k.half(), cos, sin)
    with pytest.raises(TypeError, match="cos has dtype float64"):
        apply_rope(q, k, cos.double(), sin)
    with pytest.raises(ValueError, match="k is on meta"):
        apply_rope(q, k.to("meta"), cos, sin)
    with pytest.raises(ValueError, match="sin is on meta"):
        apply_rope(q, k, cos, sin.to("meta"))
    with pytest.raises(ValueError, match="q must be 4-D"):
        apply_rope(q[0], k, cos, sin)
    with pytest.raises(ValueError, match=r"k has shape \(2, 2, 5, 32\)"):
        apply_rope(q, k[..., :32], cos, sin)
    with pytest.raises(ValueError, match=r"k has shape \(2, 2, 6, 64\) but q has \(2, 4, 5, 64\): B, S and D must"):
        apply_rope(q, torch.randn(2, 2, 6, 64, device=device), cos, sin)
    with pytest.raises(ValueError, match=r"k has shape \(3, 2, 5, 64\)"):
        apply_rope(q, torch.randn(3, 2, 5, 64, device=device), cos, sin)
    with pytest.raises(ValueError, match="k must have unit stride in its head dim"):
        apply_rope(q, torch.randn(2, 2, 5, 128, device=device)[..., ::2], cos, sin)
    table_cos, table_sin = _cos_sin(torch.arange(100), 64, torch.float32, device)
    with pytest.raises(TypeError, match="position_ids has dtype float32"):
        apply_rope(q, k, table_cos, table_sin, position_ids=torch.zeros(5, device=device))
    with pytest.raises(ValueError, match=r"position_ids must have shape \[S\] or \[B or 1, S\]"):
        apply_rope(q, k, table_cos, table_sin, position_ids=torch.zeros(6, device=device, dtype=torch.long))
    with pytest.raises(ValueError, match="position_ids is on meta"):
        apply_rope(q, k, table_cos, table_sin, position_ids=torch.zeros(5, device="meta", dtype=torch.long))
    with pytest.raises(ValueError, match=r"cos has shape \(2, 5, 64\); expected \[max_position"):
        apply_rope(q, k, cos.expand(2, 5, 64), sin.expand(2, 5, 64),
                   position_ids=torch.zeros(5, device=device, dtype=torch.long))


# (B_cache, B, HQ, HK, S, D, rotary_dim, lengths): one length for all (0-d as transformers' StaticLayer keeps it, and
# [1]), one a sequence, a prefill of several rows, rows past the capacity (dropped), partial rotary, ragged heads,
# heads of 512 (decode_attention's widest; Gemma 4's full layers)
APPEND_CASES = [(1, 1, 4, 2, 1, 64, None, 5), (3, 2, 8, 2, 1, 128, None, [7]), (2, 2, 6, 3, 3, 80, 32, [0, 10]),
                (2, 2, 4, 4, 4, 32, None, 14), (1, 1, 40, 8, 2, 128, 64, [3]), (2, 2, 4, 1, 1, 512, 128, [5, 15])]


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("B_cache, B, HQ, HK, S, D, rotary_dim, lengths", APPEND_CASES)
def test_rope_append_kv(B_cache, B, HQ, HK, S, D, rotary_dim, lengths, interleaved, device):
    """q comes back rotated; k rotated and v land at each sequence's length (rows past the capacity nowhere), every
    other cache row is kept, the lengths grow by S; a second call (a decode step) appends after the first. q, k and v
    are views of one fused projection [B, S, (HQ + 2 HK) D], as in a model."""
    capacity, dtype = 16, torch.bfloat16
    caches = [torch.randn(B_cache, HK, capacity, D, device=device, dtype=dtype) for _ in range(2)]
    lengths_t = torch.tensor(lengths, device=device, dtype=torch.int64 if isinstance(lengths, int) else torch.int32)
    expect = [c.clone() for c in caches] + [lengths_t.clone()]
    for step in range(2):
        qkv = torch.randn(B, S, HQ + 2 * HK, D, device=device, dtype=dtype).transpose(1, 2)
        q, k, v = qkv.split([HQ, HK, HK], 1)
        cos, sin = _cos_sin(torch.arange(S) * 31 + 100 * step, rotary_dim or D, dtype, device)
        q_out = apply_rope_append_kv(q, k, v, cos, sin, *caches, lengths_t, interleaved=interleaved,
                                     rotary_dim=rotary_dim)
        q_ref, k_ref = rope_reference(q, k, cos, sin, None, interleaved, rotary_dim)
        assert q_out.shape == q.shape and q_out.dtype == dtype and rel_err(q_out, q_ref) < TOL[dtype]
        starts = expect[2].reshape(-1).expand(B).tolist()
        append_kv_reference(*expect[:2], k_ref.to(dtype), v, expect[2])
        assert torch.equal(lengths_t, expect[2]) and lengths_t.dtype == expect[2].dtype
        assert torch.equal(caches[1], expect[1])  # v copied, the other rows kept
        written = torch.zeros(caches[0].shape, dtype=torch.bool, device=device)
        for b, start in enumerate(starts):
            written[b, :, start:start + S] = True
        assert torch.equal(caches[0][~written], expect[0][~written])
        assert rel_err(caches[0][written].double(), expect[0][written].double()) < TOL[dtype]
        if rotary_dim is not None:  # the pass-through dims copied exactly
            assert torch.equal(caches[0][..., rotary_dim:], expect[0][..., rotary_dim:])


def test_rope_append_kv_position_ids(device):
    """cos / sin as a table gathered at position_ids ([B, S]), a length a sequence."""
    B, HQ, HK, S, D = 2, 4, 2, 3, 32
    q, k = _qk(B, HQ, HK, S, D, torch.float32, device)
    v = torch.randn_like(k)
    table_cos, table_sin = _cos_sin(torch.arange(64), D, torch.float32, device)
    pos = torch.tensor([[5, 40, 3], [63, 0, 17]], device=device)
    caches = [torch.zeros(B, HK, 8, D, device=device) for _ in range(2)]
    lengths = torch.tensor([0, 4], device=device, dtype=torch.int32)
    q_out = apply_rope_append_kv(q, k, v, table_cos, table_sin, *caches, lengths, position_ids=pos)
    q_ref, k_ref = rope_reference(q, k, table_cos, table_sin, pos)
    assert rel_err(q_out, q_ref) < TOL[torch.float32] and lengths.tolist() == [3, 7]
    assert rel_err(caches[0][0, :, :3], k_ref[0]) < TOL[torch.float32]
    assert rel_err(caches[0][1, :, 4:7], k_ref[1]) < TOL[torch.float32]
    assert torch.equal(caches[1][1, :, 4:7], v[1]) and not caches[1][1, :, :4].any()


def test_rope_append_kv_paged(device):
    """A paged cache [pages, Hkv, page_size, D] through a block table (a column slice of a wider one): the rotated k
    and v land in each sequence's pages at its length, across a page boundary, the other slots kept; v in another
    layout than k's ([B, S, H, D] transposed), each read by its own strides."""
    B, HQ, HK, S, D, page_size = 2, 4, 2, 3, 32, 4
    q, k = _qk(B, HQ, HK, S, D, torch.float32, device)
    v = torch.randn(B, S, HK, D, device=device).transpose(1, 2)
    cos, sin = _cos_sin(torch.arange(S) + 7, D, torch.float32, device)
    caches = [torch.randn(5, HK, page_size, D, device=device) for _ in range(2)]
    table = torch.zeros(B, 5, device=device, dtype=torch.int32)[:, :2]
    table.copy_(torch.tensor([[3, 0], [1, 4]]))  # page 2 belongs to no sequence
    lengths = torch.tensor([2, 6], device=device, dtype=torch.int32)
    expect = [c.clone() for c in caches] + [lengths.clone()]
    q_out = apply_rope_append_kv(q, k, v, cos, sin, *caches, lengths, block_table=table)
    q_ref, k_ref = rope_reference(q, k, cos, sin)
    append_kv_reference(*expect[:2], k_ref.float(), v, expect[2], table)
    assert rel_err(q_out, q_ref) < TOL[torch.float32] and torch.equal(lengths, expect[2])
    assert torch.equal(caches[1], expect[1]) and rel_err(caches[0], expect[0]) < TOL[torch.float32]
    assert torch.equal(caches[0][2], expect[0][2])  # the spare page


@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("rotary_dim, page_size", [(None, None), (32, 4)])
def test_rope_append_kv_fp8(rotary_dim, page_size, interleaved, device):
    """fp8 caches (contiguous, or paged): the rotated k and v land as codes of k / k_scale and v / v_scale, as append_kv
    writes them (v, and k's pass-through dims, bit for bit quantize_kv's; the rotated dims rounded once from the fp32
    rotation, so within a code of quantize_kv of the float64 one), saturated (rows of 1000 x a unit normal), the
    other rows kept; decode_attention reads them back."""
    B, HQ, HK, S, D, capacity, k_scale, v_scale = 2, 4, 2, 3, 64, 8, 0.5, 0.25
    q, k = _qk(B, HQ, HK, S, D, torch.bfloat16, device)
    k, v = k * 1000, torch.randn_like(k)
    cos, sin = _cos_sin(torch.arange(S) + 5, rotary_dim or D, torch.bfloat16, device)
    if page_size is None:
        caches, table = [quantize_kv(torch.randn(B, HK, capacity, D, device=device)) for _ in range(2)], None
    else:
        caches = [quantize_kv(torch.randn(5, HK, page_size, D, device=device)) for _ in range(2)]
        table = torch.tensor([[3, 0], [1, 4]], device=device, dtype=torch.int32)
    lengths = torch.tensor([0, 4], device=device, dtype=torch.int32)
    expect = [c.clone() for c in caches] + [lengths.clone()]
    q_out = apply_rope_append_kv(q, k, v, cos, sin, *caches, lengths, block_table=table, interleaved=interleaved,
                                 rotary_dim=rotary_dim, k_scale=k_scale, v_scale=v_scale)
    q_ref, k_ref = rope_reference(q, k, cos, sin, None, interleaved, rotary_dim)
    assert rel_err(q_out, q_ref) < TOL[torch.bfloat16] and torch.equal(lengths, expect[2] + S)
    append_kv_reference(*expect[:2], k_ref.float(), v, expect[2], table, k_scale, v_scale)
    assert torch.equal(caches[1].view(torch.uint8), expect[1].view(torch.uint8))
    got, want = caches[0].double(), expect[0].double()
    assert ((got - want).abs() <= want.abs() / 8 + 2.0**-9).all() and got.abs().max() == 448
    rd = rotary_dim or D
    assert torch.equal(caches[0][..., rd:].view(torch.uint8), expect[0][..., rd:].view(torch.uint8))
    out = decode_attention(q_out, *caches, lengths, table, k_scale=k_scale, v_scale=v_scale)
    assert rel_err(out, decode_attention_reference(q_out, *caches, lengths, table, k_scale=k_scale,
                                                   v_scale=v_scale)) < TOL[torch.bfloat16]


def test_rope_append_kv_bad_input(device):
    q, k = _qk(1, 4, 2, 1, 16, torch.float32, device)
    cos, sin = _cos_sin(torch.arange(1), 16, torch.float32, device)
    cache = torch.zeros(1, 2, 8, 16, device=device)
    lengths = torch.zeros((), dtype=torch.int32, device=device)
    with pytest.raises(ValueError, match="k_cache .* cannot hold k"):
        apply_rope_append_kv(q, k, k, cos, sin, cache[:, :1], cache[:, :1], lengths)
    with pytest.raises(TypeError, match="cache_lengths must be an int32 or int64"):
        apply_rope_append_kv(q, k, k, cos, sin, cache, cache, lengths.float())
    with pytest.raises(TypeError, match="k_cache has dtype"):
        apply_rope_append_kv(q, k, k, cos, sin, cache.half(), cache, lengths)
    with pytest.raises(ValueError, match=r"cos has shape \(1, 12\)"):
        apply_rope_append_kv(q, k, k, cos[:, :12], sin[:, :12], cache, cache, lengths)


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    def attention_prologue(q, k, cos, sin, q2, k2, cos32, sin32, table_cos, table_sin, pos):
        q_out, k_out = apply_rope(q, k, cos, sin)
        apply_rope(q2, k2, cos32, sin32, interleaved=True, rotary_dim=32, inplace=True)
        table_q, _ = apply_rope(q, k, table_cos, table_sin, position_ids=pos)
        return q_out * 2.0, k_out + 1.0, q2 * 1.0, table_q

    q, k = _qk(2, 4, 2, 6, 64, torch.float16, DEVICE)
    q2, k2 = _qk(2, 4, 2, 6, 64, torch.float16, DEVICE)
    cos, sin = _cos_sin(torch.arange(6) * 11, 64, torch.float16, DEVICE)
    cos32, sin32 = _cos_sin(torch.arange(6) * 11, 32, torch.float16, DEVICE)
    table_cos, table_sin = _cos_sin(torch.arange(100), 64, torch.float16, DEVICE)
    pos = torch.tensor([5, 40, 3, 99, 1, 0], device=DEVICE)
    q_ref, k_ref = rope_reference(q, k, cos, sin)
    q2_ref, _ = rope_reference(q2, k2, cos32, sin32, None, True, 32)
    table_ref, _ = rope_reference(q, k, table_cos, table_sin, pos)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    compiled = torch.compile(attention_prologue, backend=counter, fullgraph=True)
    q_out, k_out, q2_out, table_q = compiled(q, k, cos, sin, q2, k2, cos32, sin32, table_cos, table_sin, pos)
    assert counter.frame_count == 1
    assert rel_err(q_out, q_ref * 2.0) < TOL[torch.float16] and rel_err(k_out, k_ref + 1.0) < TOL[torch.float16]
    assert rel_err(q2_out, q2_ref) < TOL[torch.float16]
    assert rel_err(table_q, table_ref) < TOL[torch.float16]


def test_rope_append_kv_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    q, k = _qk(1, 4, 2, 1, 64, torch.float16, DEVICE)
    cos, sin = _cos_sin(torch.tensor([3]), 64, torch.float16, DEVICE)
    caches = [torch.zeros(1, 2, 8, 64, device=DEVICE, dtype=torch.float16) for _ in range(2)]
    lengths = torch.tensor(3, device=DEVICE)
    q_ref, k_ref = rope_reference(q, k, cos, sin)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")

    def step(q, k):
        return apply_rope_append_kv(q, k, k * 2, cos, sin, caches[0], caches[1], lengths) * 2.0

    q_out = torch.compile(step, backend=counter, fullgraph=True)(q, k)
    assert counter.frame_count == 1 and lengths.item() == 4
    assert rel_err(q_out, q_ref * 2.0) < TOL[torch.float16]
    assert rel_err(caches[0][:, :, 3], k_ref[:, :, 0]) < TOL[torch.float16]
    assert torch.equal(caches[1][:, :, 3], 2 * k[:, :, 0])


@pytest.mark.slow
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("S, D, rotary_dim", [(32768, 128, None), (4096, 256, 64), (8192, 80, 32)])
def test_gpu_sizes(S, D, rotary_dim, interleaved):
    q, k = _qk(1, 32, 8, S, D, torch.bfloat16, "cuda")
    cos, sin = _cos_sin(torch.arange(S), rotary_dim or D, torch.bfloat16, "cuda")
    _check(q, k, cos, sin, torch.bfloat16, interleaved=interleaved, rotary_dim=rotary_dim)


@pytest.mark.slow
def test_past_2_31_elements():
    B, HQ, HK, S, D = 1, 64, 8, 2**31 // (64 * 128) + 5, 128
    q = torch.randn(B, S, HQ, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    k = torch.randn(B, S, HK, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    cos, sin = _cos_sin(torch.arange(S), D, torch.bfloat16, "cuda")
    tail = slice(S - 3, None)
    q_tail, k_tail = q[:, :, tail].clone(), k[:, :, tail].clone()
    apply_rope(q, k, cos, sin, inplace=True)
    q_ref, k_ref = rope_reference(q_tail, k_tail, cos[tail], sin[tail])
    assert rel_err(q[:, :, tail], q_ref) < TOL[torch.bfloat16] and rel_err(k[:, :, tail], k_ref) < TOL[torch.bfloat16]
