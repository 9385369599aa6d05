import types

import pytest
import torch
import torch.nn.functional as F

import rooftop
from conftest import DEVICE, HAS_CUDA, TOL, assert_attention_result, rel_err
from rooftop import registry
from rooftop.ops import decode_attention as decode_mod
from rooftop.ops.attention import attention
from rooftop.ops.decode_attention import (append_kv, append_kv_reference, decode_attention, decode_attention_cost,
                                          decode_attention_eager, decode_attention_reference, gather_cache,
                                          quantize_kv)

FP8 = torch.float8_e4m3fn


def _inputs(B, Hq, Hkv, Sq, capacity, D, dtype, device, page_size=None):
    """q [B, Hq, Sq, D] and caches of `capacity` keys a sequence: contiguous, or paged (shuffled pages, one
    spare) with its block table."""
    q = torch.randn(B, Hq, Sq, D, device=device, dtype=dtype)
    if page_size is None:
        k, v = (torch.randn(B, Hkv, capacity, D, device=device, dtype=dtype) for _ in range(2))
        return q, k, v, None
    per_seq = -(-capacity // page_size)
    k, v = (torch.randn(B * per_seq + 1, Hkv, page_size, D, device=device, dtype=dtype) for _ in range(2))
    table = torch.randperm(B * per_seq + 1, device=device)[:B * per_seq].to(torch.int32).view(B, per_seq)
    return q, k, v, table


def _seqlens(lengths, device):
    return torch.tensor(lengths, dtype=torch.int32, device=device)


def _check(q, k, v, seqlens, table=None, num_splits=None, tol=None, key_mask=None, sinks=None, softcap=None,
           bounds=False, **scales):
    """decode_attention against the reference; bounds: the kernel also given key_mask_bounds of the mask."""
    extra = dict(mask_bounds=rooftop.key_mask_bounds(key_mask, seqlens)) if bounds else {}
    out, lse = decode_attention(q, k, v, seqlens, table, num_splits=num_splits, return_lse=True, key_mask=key_mask,
                                sinks=sinks, softcap=softcap, **extra, **scales)
    ref, ref_lse = decode_attention_reference(q, k, v, seqlens, table, key_mask, return_lse=True, sinks=sinks,
                                              softcap=softcap, **scales)
    assert_attention_result(out, lse, ref, ref_lse, q, tol)
    return out, lse


# (B, Hq, Hkv, Sq, D, dtype, page_size, lengths): ragged lengths with an empty sequence and ones shorter than Sq
# (queries that see no key), GQA ratios 1 / 4 / 8, MQA, several new tokens, head dims padded (40 -> 64)
CASES = [
    (3, 8, 2, 1, 64, torch.bfloat16, None, [100, 37, 0]),
    (2, 4, 4, 1, 32, torch.float16, None, [70, 1]),
    (2, 8, 1, 3, 64, torch.float32, None, [2, 90]),
    (2, 8, 2, 1, 64, torch.bfloat16, 16, [100, 33]),
    (2, 4, 1, 2, 40, torch.float16, 8, [0, 61]),
    (1, 8, 1, 1, 128, torch.bfloat16, 32, [77]),
    (2, 8, 1, 1, 512, torch.bfloat16, None, [70, 13]),  # Gemma 4's full layers' heads (16 query rows a program)
]


@pytest.mark.parametrize("num_splits", [1, 3])
@pytest.mark.parametrize("B, Hq, Hkv, Sq, D, dtype, page_size, lengths", CASES)
def test_matches_reference(B, Hq, Hkv, Sq, D, dtype, page_size, lengths, num_splits, device):
    q, k, v, table = _inputs(B, Hq, Hkv, Sq, 100, D, dtype, device, page_size)
    _check(q, k, v, _seqlens(lengths, device), table, num_splits)


@pytest.mark.parametrize("num_splits", [1, 2])
def test_pages_that_hold_whole_tiles(num_splits, device):
    """Pages of a multiple of the kernel's key tile (BLOCK_N): one page id a tile."""
    page_size = 2 * decode_mod.BLOCK_N
    q, k, v, table = _inputs(3, 8, 2, 1, 3 * page_size - 20, 64, torch.float16, device, page_size)
    _check(q, k, v, _seqlens([3 * page_size - 20, page_size + 1, 5], device), table, num_splits)


def test_equals_causal_attention_per_sequence(device):
    """Each sequence's result is attention() over its first cache_seqlens[b] keys, causal (bottom-right)."""
    q, k, v, _ = _inputs(2, 8, 2, 2, 90, 64, torch.float32, device)
    lengths = [90, 41]
    out = decode_attention(q, k, v, _seqlens(lengths, device), num_splits=2)
    for b, length in enumerate(lengths):
        ref = attention(q[b:b + 1], k[b:b + 1, :, :length], v[b:b + 1, :, :length], causal=True)
        assert rel_err(out[b:b + 1], ref.double()) < 1e-5


def test_row_tiles_and_default_splits(device, monkeypatch):
    """More query rows than a program holds (16 heads over one kv head, 5 new tokens: 80 rows, two tiles),
    with the default split count and with many splits, most of them past the keys: those write no partials and the
    merging split reads none of them (fresh float memory is NaN here, so a read of one would show)."""
    q, k, v, _ = _inputs(2, 16, 1, 5, 300, 32, torch.float16, device)
    seqlens = _seqlens([300, 40], device)
    empty = torch.empty

    def poisoned(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(torch, "empty", poisoned)
    for splits in (None, 11):
        _check(q, k, v, seqlens, num_splits=splits)


@pytest.mark.parametrize("Sq, page_size, num_splits", [(1, None, 1), (1, 16, 3), (2, None, 2)])
def test_key_mask(Sq, page_size, num_splits, device):
    """A key mask as a model passes one (left padding, holes, a sequence masked whole): a key is seen only where the
    mask and the lengths both allow it; a broadcast mask row (stride 0) too."""
    q, k, v, table = _inputs(3, 8, 2, Sq, 96, 64, torch.bfloat16, device, page_size)
    seqlens = _seqlens([96, 50, 70], device)
    mask = torch.rand(3, 96, device=device) > 0.3
    mask[1, :20] = False  # left padding
    mask[2] = False
    _check(q, k, v, seqlens, table, num_splits, key_mask=mask)
    row = (torch.arange(96, device=device) >= 7)[None].expand(3, -1)
    _check(q, k, v, seqlens, table, num_splits, key_mask=row)


def test_mask_bounds_values(device):
    """mask_bounds: a sequence's first seen key before its length (the length where none) and whether the mask is
    exactly the range from there: left padding, every key, a hole, none seen, keys seen only past the length, a
    window, a length past the mask's width (clamped to it), a negative one (0); a broadcast mask row; no key."""
    rows = [[0, 0, 1, 1, 1, 1, 0, 0], [1] * 8, [1, 0, 1, 1, 1, 1, 1, 1], [0] * 8, [0, 0, 0, 0, 1, 1, 1, 1],
            [0, 0, 0, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1, 1, 1]]
    mask = torch.tensor(rows, dtype=torch.bool, device=device)
    lengths = _seqlens([6, 8, 8, 5, 3, 5, 20, -3], device)
    bounds = rooftop.key_mask_bounds(mask, lengths)
    assert bounds.dtype == torch.int32 and bounds.device == mask.device
    assert bounds.tolist() == [[2, 1], [0, 1], [0, 0], [5, 1], [3, 1], [3, 1], [1, 1], [0, 1]]
    row = mask[:1].expand(3, -1)  # stride 0 along the batch
    assert rooftop.key_mask_bounds(row, _seqlens([7, 2, 1], device)).tolist() == [[2, 0], [2, 1], [1, 1]]
    empty = rooftop.key_mask_bounds(mask[:, :0], lengths)
    assert empty.tolist() == [[0, 1]] * 8 and empty.is_contiguous()


def _range_mask(lengths, width, starts, device):
    """bool [B, width]: key j of sequence b seen where starts[b] <= j < lengths[b]."""
    keys = torch.arange(width, device=device)
    return (keys >= torch.tensor(starts, device=device)[:, None]) & (keys < lengths[:, None])


@pytest.mark.parametrize("Sq, page_size, num_splits", [(1, None, 1), (1, 16, 3), (2, 128, 2), (1, None, 4)])
def test_key_mask_with_bounds(Sq, page_size, num_splits, device):
    """With mask_bounds the result is the mask's: ranges past a whole first tile (left padding of 150 keys), a window
    of 40, every key, a mask with holes (read), one that sees nothing, in one batch."""
    q, k, v, table = _inputs(5, 4, 2, Sq, 384, 32, torch.float16, device, page_size)
    seqlens = _seqlens([300, 290, 260, 280, 200], device)
    mask = _range_mask(seqlens, 384, [150, 250, 0, 0, 300], device)
    mask[3] &= torch.rand(384, device=device) > 0.3  # holes
    assert rooftop.key_mask_bounds(mask, seqlens)[:, 1].tolist() == [1, 1, 1, 0, 1]
    _check(q, k, v, seqlens, table, num_splits, key_mask=mask, bounds=True)


@pytest.mark.parametrize("page_size, num_splits", [(None, 1), (16, 3), (128, 2)])
def test_mask_bounds_are_taken(page_size, num_splits, device):
    """The kernel takes the bounds as given: a sequence they call exactly its range has no mask byte read (its holes
    are not applied), no key before their first one is seen, whatever its mask says, and the whole key tiles before
    that one's are not read (NaN there changes nothing); a first key past the length: no key seen."""
    q, k, v, table = _inputs(3, 4, 1, 1, 384, 32, torch.float16, device, page_size)
    seqlens = _seqlens([300, 270, 250], device)
    mask = torch.rand(3, 384, device=device) > 0.3
    mask[1:] = True
    bounds = torch.tensor([[0, 1], [140, 1], [400, 1]], dtype=torch.int32, device=device)
    out = decode_attention(q, k, v, seqlens, table, num_splits=num_splits, key_mask=mask, mask_bounds=bounds)
    taken = _range_mask(seqlens, 384, [0, 140, 400], device)
    ref = decode_attention_reference(q, k, v, seqlens, table, taken)
    assert rel_err(out, ref) < TOL[torch.float16] and not out[2].any()
    skipped = 140 // decode_mod._block_n(32) * decode_mod._block_n(32)  # sequence 1's keys in tiles before its first
    for cache in (k, v):
        if table is None:
            cache[1, :, :skipped] = float("nan")
        else:
            cache[table[1, :skipped // page_size].long()] = float("nan")
    assert torch.equal(decode_attention(q, k, v, seqlens, table, num_splits=num_splits, key_mask=mask,
                                        mask_bounds=bounds), out)


@pytest.mark.parametrize("Sq, page_size, num_splits", [(1, None, 1), (1, 16, 3), (2, None, 2)])
def test_sinks(Sq, page_size, num_splits, device):
    """gpt-oss's attention sinks: a logit a query head that joins the softmax with no value, against its eager form
    (a column of them beside the scores, dropped after the softmax); large sinks take most of the weight, a sequence
    with no keys gets out 0 and lse its sink; bf16 sinks (the model's dtype) with a key mask, in one call."""
    q, k, v, table = _inputs(3, 8, 2, Sq, 96, 64, torch.bfloat16, device, page_size)
    seqlens = _seqlens([96, 0, 41], device)
    sinks = torch.randn(8, device=device) * 3
    sinks[0] = 6.0  # past a row's log-sum of 96 scores (~5): the sinks matter whatever the draw
    out, lse = _check(q, k, v, seqlens, table, num_splits, sinks=sinks)
    assert torch.allclose(lse[1], sinks[:, None].expand(-1, Sq).float()) and not out[1].any()
    plain = decode_attention(q, k, v, seqlens, table, num_splits=num_splits)
    assert rel_err(out[0], plain[0]) > 0.01  # the sinks mattered
    S = 41  # sequence 2 against the eager form gpt-oss writes (transformers' GptOssAttention)
    keys, values = (t.repeat_interleave(4, 1) for t in (decode_mod.gather_cache(c, table, 3, 96)[2:, :, :S]
                                                       for c in (k, v)))
    scores = (q[2:].double() @ keys.double().transpose(-1, -2)) / 8.0
    scores = scores.masked_fill(torch.arange(S, device=device) > torch.arange(Sq, device=device)[:, None] + S - Sq,
                                -float("inf"))
    combined = torch.cat([scores, sinks.double().view(1, -1, 1, 1).expand(1, -1, Sq, 1)], -1).softmax(-1)
    assert rel_err(out[2:], combined[..., :-1] @ values.double()) < TOL[torch.bfloat16]
    mask = torch.rand(3, 96, device=device) > 0.3
    _check(q, k, v, seqlens, table, num_splits, key_mask=mask, sinks=(sinks * 4).bfloat16())
    off = sinks.clone()
    off[::2] = -float("inf")  # a head's sink switched off: as no sink; a row with no key still 0 and -inf, not NaN
    out, lse = _check(q, k, v, seqlens, table, num_splits, sinks=off)
    assert not out[1].any() and torch.isneginf(lse[1, ::2]).all()
    assert rel_err(out[0, ::2], plain[0, ::2]) < TOL[torch.bfloat16]


@pytest.mark.parametrize("Sq, page_size, num_splits", [(1, None, 1), (1, 16, 3), (2, None, 2)])
def test_softcap(Sq, page_size, num_splits, device):
    """Gemma 2's soft-capping (cap tanh(s / cap) before the mask) against its eager form: scores pushed past a cap of
    5 come out capped (the cap matters), with a key mask, with sinks, split and merged; an empty sequence 0 / -inf."""
    q, k, v, table = _inputs(3, 8, 2, Sq, 96, 64, torch.bfloat16, device, page_size)
    q = q * 4  # scores up to ~30
    seqlens = _seqlens([96, 0, 41], device)
    out, lse = _check(q, k, v, seqlens, table, num_splits, softcap=5.0)
    assert not out[1].any() and torch.isneginf(lse[1]).all()
    assert rel_err(out, decode_attention(q, k, v, seqlens, table, num_splits=num_splits)) > 0.01
    S = 41  # sequence 2 against Gemma 2's eager form (transformers' Gemma2Attention)
    keys, values = (t.repeat_interleave(4, 1) for t in (decode_mod.gather_cache(c, table, 3, 96)[2:, :, :S]
                                                       for c in (k, v)))
    scores = torch.tanh(q[2:].double() @ keys.double().transpose(-1, -2) / 8.0 / 5.0) * 5.0
    scores = scores.masked_fill(torch.arange(S, device=device) > torch.arange(Sq, device=device)[:, None] + S - Sq,
                                -float("inf"))
    assert rel_err(out[2:], scores.softmax(-1) @ values.double()) < TOL[torch.bfloat16]
    mask = torch.rand(3, 96, device=device) > 0.3
    _check(q, k, v, seqlens, table, num_splits, key_mask=mask, softcap=5.0, sinks=torch.randn(8, device=device))


def test_strided_layouts(device):
    """q as a transposed [B, S, H, D] (Hugging Face's), caches in flash-attn's paged [pages, page_size, Hkv, D]
    layout seen through .transpose(1, 2), and a contiguous cache holding more sequences than the batch."""
    q = torch.randn(2, 1, 8, 64, device=device, dtype=torch.float16).transpose(1, 2)
    pages = torch.randn(13, 16, 2, 64, device=device, dtype=torch.float16)
    k, v = pages.transpose(1, 2), torch.randn_like(pages).transpose(1, 2)
    table = torch.randperm(13, device=device)[:12].to(torch.int32).view(2, 6)
    _check(q, k, v, _seqlens([96, 50], device), table, num_splits=2)
    k, v = (torch.randn(3, 2, 40, 64, device=device, dtype=torch.float16) for _ in range(2))
    _check(q, k, v, _seqlens([40, 9], device))
    q3 = torch.randn(2, 3, 8, 64, device=device, dtype=torch.float16).transpose(1, 2)  # new tokens 3 apart in memory
    _check(q3, k, v, _seqlens([40, 12], device))


def test_block_table_of_a_wider_table(device):
    """A block table that is a column slice of a wider one (row stride past its width): every kernel that reads it
    (decode_attention, append_kv) takes its row stride."""
    B, per_seq, page_size = 2, 4, 8
    q, k_cache, v_cache, _ = _inputs(B, 8, 2, 1, per_seq * page_size, 32, torch.float32, device, page_size)
    table = torch.zeros(B, 2 * per_seq, device=device, dtype=torch.int32)[:, :per_seq]
    table.copy_(torch.randperm(B * per_seq + 1, device=device)[:B * per_seq].view(B, per_seq))
    lengths = _seqlens([29, 5], device)
    expect = [k_cache.clone(), v_cache.clone(), lengths.clone()]
    k, v = (torch.randn(B, 2, 3, 32, device=device) for _ in range(2))
    append_kv(k_cache, v_cache, k, v, lengths, block_table=table)
    append_kv_reference(*expect[:2], k, v, expect[2], table)
    assert torch.equal(k_cache, expect[0]) and torch.equal(v_cache, expect[1])
    _check(q, k_cache, v_cache, lengths, table, num_splits=2)


def test_merge_over_several_chunks(device):
    """64 query rows (16 heads over one kv head, 4 new tokens) at D = 128 over 4 splits: the merge of the splits'
    partial results takes several chunks of rows (MERGE_CHUNK), each rescaled by the rows' own maxima."""
    q, k, v, _ = _inputs(1, 16, 1, 4, 512, 128, torch.float16, device)
    _check(q, k, v, _seqlens([512], device), num_splits=4)


def test_scale_default_and_given(device):
    """The default scale is 1 / sqrt(D) (SDPA's over the heads each query head reads), a given one is used; checked
    against torch, not against this file's reference, which shares the wrapper's scale handling."""
    q = torch.randn(2, 8, 1, 64, device=device)
    k, v = (torch.randn(2, 2, 50, 64, device=device) for _ in range(2))
    k4, v4 = k.repeat_interleave(4, 1), v.repeat_interleave(4, 1)
    seqlens = _seqlens([50, 50], device)
    for scale in (None, 0.3):
        out = decode_attention(q, k, v, seqlens, scale=scale)
        assert rel_err(out, F.scaled_dot_product_attention(q, k4, v4, scale=scale).double()) < 1e-5


@pytest.mark.parametrize("num_splits", [None, 3])
def test_repeated_calls_replay(num_splits, monkeypatch, device):
    """A second call of the same signature (fresh data) replays the first's launches (ops/_support.py's plans), split
    workspace allocated anew, and is right."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "PLANS_ENABLED", True)
    seqlens = _seqlens([64, 9], device)
    for call in range(3):
        q, k, v, _ = _inputs(2, 8, 2, 1, 64, 32, torch.bfloat16, device)
        _check(q, k, v, seqlens, num_splits=num_splits)
        if call == 0:
            monkeypatch.setattr(decode_mod, "_check_decode", lambda *a: pytest.fail("the call was not replayed"))


def test_lengths_are_clamped_to_the_capacity(device):
    """A length past the cache's capacity reads the whole cache, a negative one no key (never outside the cache)."""
    q, k, v, _ = _inputs(3, 8, 2, 1, 80, 64, torch.bfloat16, device)
    out, lse = decode_attention(q, k, v, _seqlens([10**6, -5, 80], device), num_splits=2, return_lse=True)
    ref = decode_attention_reference(q, k, v, _seqlens([80, 0, 80], device))
    assert rel_err(out, ref) < TOL[torch.bfloat16] and bool((lse[1] == float("-inf")).all())


def test_empty(device):
    q, k, v, _ = _inputs(0, 4, 2, 1, 16, 32, torch.float16, device)
    assert decode_attention(q, k, v, _seqlens([], device)).shape == (0, 4, 1, 32)
    q, k, v, _ = _inputs(2, 4, 2, 1, 0, 32, torch.float16, device)  # a cache of no key
    out, lse = decode_attention(q, k, v, _seqlens([0, 0], device), return_lse=True)
    assert torch.equal(out, torch.zeros_like(out)) and bool((lse == float("-inf")).all())


def test_bad_input(device):
    q, k, v, _ = _inputs(2, 4, 2, 1, 16, 32, torch.float16, device)
    seqlens = _seqlens([16, 3], device)
    with pytest.raises(TypeError, match="q has dtype int64"):
        decode_attention(q.long(), k, v, seqlens)
    with pytest.raises(TypeError, match="v_cache has dtype"):
        decode_attention(q, k, v.float(), seqlens)
    with pytest.raises(ValueError, match="q must be 4-D"):
        decode_attention(q[:, :, 0], k, v, seqlens)
    with pytest.raises(ValueError, match="v_cache has shape"):
        decode_attention(q, k, v[:, :, :5], seqlens)
    with pytest.raises(ValueError, match="k_cache has head_dim"):
        decode_attention(q, k[..., :16], v[..., :16], seqlens)
    with pytest.raises(ValueError, match=r"q has head_dim 1024; supported: 1..512"):
        wide = torch.randn(2, 2, 4, 1024, device=device, dtype=torch.float16)
        decode_attention(wide[:, :, :1].repeat(1, 2, 1, 1), wide, wide, seqlens.clamp(max=4))
    with pytest.raises(ValueError, match="multiple of k_cache's and v_cache's 3 heads"):
        odd = torch.randn(2, 3, 16, 32, device=device, dtype=torch.float16)
        decode_attention(q, odd, odd, seqlens)
    with pytest.raises(ValueError, match="k_cache is on meta"):
        decode_attention(q, k.to("meta"), v.to("meta"), seqlens)
    with pytest.raises(ValueError, match="q must have unit stride"):
        decode_attention(torch.randn(2, 4, 1, 64, device=device, dtype=torch.float16)[..., ::2], k, v, seqlens)
    with pytest.raises(TypeError, match="cache_seqlens must be an int32 tensor"):
        decode_attention(q, k, v, seqlens.long())
    with pytest.raises(ValueError, match=r"cache_seqlens must have shape \(2,\)"):
        decode_attention(q, k, v, seqlens[:1])
    with pytest.raises(ValueError, match="k_cache holds 1 sequences but q has batch 2"):
        decode_attention(q, k[:1], v[:1], seqlens)
    with pytest.raises(ValueError, match="block_table must have shape"):
        decode_attention(q, k, v, seqlens, torch.zeros(3, 2, dtype=torch.int32, device=device))
    with pytest.raises(ValueError, match="scale"):
        decode_attention(q, k, v, seqlens, scale=-1.0)
    with pytest.raises(ValueError, match="num_splits"):
        decode_attention(q, k, v, seqlens, num_splits=0)
    with pytest.raises(TypeError, match="key_mask must be a bool tensor"):
        decode_attention(q, k, v, seqlens, key_mask=torch.ones(2, 16, device=device))
    with pytest.raises(ValueError, match=r"key_mask must have shape \(2, >= 16\)"):
        decode_attention(q, k, v, seqlens, key_mask=torch.ones(2, 15, dtype=torch.bool, device=device))
    with pytest.raises(ValueError, match="key_mask must have unit stride"):
        decode_attention(q, k, v, seqlens, key_mask=torch.ones(2, 32, dtype=torch.bool, device=device)[:, ::2])
    mask = torch.ones(2, 16, dtype=torch.bool, device=device)
    with pytest.raises(ValueError, match="mask_bounds describes a key_mask"):
        decode_attention(q, k, v, seqlens, mask_bounds=rooftop.key_mask_bounds(mask, seqlens))
    with pytest.raises(ValueError, match=r"mask_bounds must have shape \(2, 2\)"):
        decode_attention(q, k, v, seqlens, key_mask=mask, mask_bounds=torch.zeros(2, dtype=torch.int32, device=device))
    with pytest.raises(TypeError, match="key_mask must be a bool tensor"):
        rooftop.key_mask_bounds(mask.int(), seqlens)
    with pytest.raises(ValueError, match="key_mask must have 2 dims"):
        rooftop.key_mask_bounds(mask[0], seqlens)
    with pytest.raises(TypeError, match="cache_seqlens must be an int32 tensor"):
        rooftop.key_mask_bounds(mask, seqlens.long())
    with pytest.raises(ValueError, match=r"cache_seqlens must have shape \(2,\)"):
        rooftop.key_mask_bounds(mask, seqlens[:1])
    with pytest.raises(TypeError, match="mask_bounds must be an int32 tensor"):
        decode_attention(q, k, v, seqlens, key_mask=mask,
                         mask_bounds=torch.zeros(2, 2, dtype=torch.int64, device=device))
    with pytest.raises(ValueError, match=r"sinks must have shape \(4,\)"):
        decode_attention(q, k, v, seqlens, sinks=torch.zeros(2, device=device))
    with pytest.raises(TypeError, match="sinks"):
        decode_attention(q, k, v, seqlens, sinks=torch.zeros(4, dtype=torch.int32, device=device))
    with pytest.raises(ValueError, match="softcap must be a positive finite number"):
        decode_attention(q, k, v, seqlens, softcap=-2.0)
    pages = torch.randn(9, 2, 4, 32, device=device, dtype=torch.float16)
    with pytest.raises(ValueError, match="block_table must have unit stride"):
        decode_attention(q, pages, pages, seqlens, torch.arange(8, dtype=torch.int32, device=device).repeat_interleave(
            2).view(2, 8)[:, ::2])


# (B_cache, B, H, S, D, lengths): one length for all (0-d, as transformers' StaticLayer keeps it, and [1]), one a
# sequence, a prefill of several rows, rows past the capacity (dropped), head dims padded (40 -> 64), heads of 512
APPEND_CASES = [(1, 1, 2, 1, 64, 5), (2, 2, 3, 1, 32, [7]), (3, 2, 2, 3, 40, [0, 9]), (2, 2, 2, 4, 16, 14),
                (1, 1, 4, 300, 32, 0), (2, 2, 1, 3, 512, [4, 15])]


@pytest.mark.parametrize("B_cache, B, H, S, D, lengths", APPEND_CASES)
def test_append_kv(B_cache, B, H, S, D, lengths, device):
    """The step's rows land at each sequence's length (rows past the capacity nowhere), every other cache row is kept,
    and the lengths grow by S; a call per decode step appends after the one before."""
    capacity = 16 if S < 300 else 400
    caches = [torch.randn(B_cache, H, capacity, D, device=device, dtype=torch.bfloat16) for _ in range(2)]
    lengths_t = torch.tensor(lengths, device=device, dtype=torch.int64 if isinstance(lengths, int) else torch.int32)
    expect = [c.clone() for c in caches] + [lengths_t.clone()]
    for _ in range(2):
        k, v = (torch.randn(B, H, S, D, device=device, dtype=torch.bfloat16) for _ in range(2))
        append_kv(*caches, k, v, lengths_t)
        append_kv_reference(*expect[:2], k, v, expect[2])
        assert torch.equal(caches[0], expect[0]) and torch.equal(caches[1], expect[1])
        assert torch.equal(lengths_t, expect[2]) and lengths_t.dtype == expect[2].dtype


@pytest.mark.parametrize("page_size, lengths, S", [(4, [3, 9], 3), (16, [0, 31], 1), (4, 5, 4)])
def test_append_kv_paged(page_size, lengths, S, device):
    """A paged cache (shuffled pages, one spare): the rows land in each sequence's pages at its length, across page
    boundaries (rows past pages_per_seq * page_size nowhere), the spare page and the other rows kept; decode_attention
    then reads the appended keys as a contiguous cache's."""
    B, Hq, H, D, capacity = 2, 8, 2, 32, 32
    q, k_cache, v_cache, table = _inputs(B, Hq, H, 1, capacity, D, torch.float32, device, page_size=page_size)
    lengths_t = torch.tensor(lengths, device=device, dtype=torch.int32)
    expect = [k_cache.clone(), v_cache.clone(), lengths_t.clone()]
    for _ in range(2):
        k, v = (torch.randn(B, H, S, D, device=device) for _ in range(2))
        append_kv(k_cache, v_cache, k, v, lengths_t, block_table=table)
        append_kv_reference(*expect[:2], k, v, expect[2], table)
        assert torch.equal(k_cache, expect[0]) and torch.equal(v_cache, expect[1])
        assert torch.equal(lengths_t, expect[2])
    seqlens = lengths_t.reshape(-1).expand(B).contiguous()
    _check(q, k_cache, v_cache, seqlens, table)


def test_append_kv_bad_input(device):
    cache = torch.zeros(2, 2, 8, 16, device=device)
    k = torch.zeros(2, 2, 1, 16, device=device)
    lengths = torch.zeros(2, dtype=torch.int32, device=device)
    with pytest.raises(TypeError, match="cache_lengths must be an int32 or int64"):
        append_kv(cache, cache, k, k, lengths.float())
    with pytest.raises(ValueError, match=r"cache_lengths must have shape \(\), \(1,\) or \(2,\)"):
        append_kv(cache, cache, k, k, torch.zeros(3, dtype=torch.int32, device=device))
    spaced = torch.zeros(4, dtype=torch.int32, device=device)
    with pytest.raises(ValueError, match="cache_lengths must have unit stride"):  # it would advance spaced[1]
        append_kv(cache, cache, k, k, spaced[::2])
    assert not spaced.any()
    with pytest.raises(ValueError, match="k_cache .* cannot hold k"):
        append_kv(cache[:, :1], cache[:, :1], k, k, lengths)
    with pytest.raises(TypeError, match="v_cache has dtype"):
        append_kv(cache, cache.half(), k, k, lengths)
    with pytest.raises(ValueError, match="v must have k's shape"):
        append_kv(cache, cache, k, torch.zeros(2, 2, 2, 16, device=device), lengths)
    with pytest.raises(TypeError, match="block_table must be an int32 tensor"):
        append_kv(cache, cache, k, k, lengths, block_table=torch.zeros(2, 3, device=device))
    with pytest.raises(ValueError, match=r"block_table must have shape \(2, 3\)|block_table must have shape"):
        append_kv(cache, cache, k, k, lengths, block_table=torch.zeros(3, 3, dtype=torch.int32, device=device))


def test_append_kv_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    cache = [torch.zeros(1, 2, 8, 16, device=DEVICE) for _ in range(2)]
    lengths = torch.tensor(3, device=DEVICE)
    k = torch.randn(1, 2, 1, 16, device=DEVICE)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")

    def step(k):
        rooftop.append_kv(cache[0], cache[1], k, k * 2, lengths)
        return cache[0][:, :, :5].sum()

    torch.compile(step, backend=counter, fullgraph=True)(k)
    assert counter.frame_count == 1 and lengths.item() == 4
    assert torch.equal(cache[0][:, :, 3], k[:, :, 0]) and torch.equal(cache[1][:, :, 3], 2 * k[:, :, 0])


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    q, k, v, table = _inputs(2, 8, 2, 1, 64, 32, torch.float16, DEVICE, page_size=16)
    seqlens = _seqlens([64, 20], DEVICE)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    out = torch.compile(lambda *a: rooftop.decode_attention(*a) * 2.0, backend=counter, fullgraph=True)(
        q, k, v, seqlens, table)
    assert counter.frame_count == 1
    assert rel_err(out, 2.0 * decode_attention_reference(q, k, v, seqlens, table)) < TOL[torch.float16]


def test_eager_form_and_gather(device):
    q, k, v, table = _inputs(2, 8, 2, 1, 48, 32, torch.float32, device, page_size=16)
    seqlens = _seqlens([48, 48], device)
    assert rel_err(decode_attention_eager(q, k, v, seqlens, table),
                   decode_attention_reference(q, k, v, seqlens, table)) < 1e-5
    rows = gather_cache(k, table, 2, 48)
    assert torch.equal(rows[1, :, 17], k[table[1, 1], :, 1])


def test_cost_and_registry():
    cost = decode_attention_cost((4, 32, 1024, 128), torch.bfloat16)
    assert cost.bytes == (2 * 4 * 32 * 128 + 2 * 4 * 8 * 1024 * 128) * 2
    assert cost.flops == 4 * 4 * 32 * 1024 * 128
    fp8 = decode_attention_cost((4, 32, 1024, 128), torch.bfloat16, cache_itemsize=1)
    assert fp8.bytes == 2 * 4 * 32 * 128 * 2 + 2 * 4 * 8 * 1024 * 128 and fp8.flops == cost.flops
    assert registry.get("decode_attention_fp8").cost((4, 32, 1024, 128), torch.bfloat16) == fp8
    sdpa = {"sdpa_flash", "sdpa_cudnn", "sdpa_efficient"}
    for name, peers, batch in (("decode_attention", sdpa, None), ("decode_attention_paged", set(), None),
                               ("decode_attention_b1", sdpa, 1), ("decode_attention_fp8", set(), None),
                               ("decode_attention_d512", sdpa, None)):
        spec = registry.get(name)
        assert spec.family == "decode_attention" and spec.x_key == "S" and set(spec.peers) == peers
        assert all((B == 1) if batch else (B * L == 131072) for B, _, L, _ in spec.cases)
        assert all(D == (512 if name.endswith("d512") else 128) for *_, D in spec.cases)
        inputs = spec.make_inputs((2, 8, 40, 32), torch.float16, DEVICE)
        assert rel_err(spec.run(*inputs), spec.reference(*inputs)) < TOL[torch.float16]
    fp8 = registry.get("decode_attention_fp8")  # its eager form: the codes dequantized, then the 16-bit one
    inputs = fp8.make_inputs((2, 8, 40, 32), torch.float16, DEVICE)
    assert inputs[1].dtype == inputs[2].dtype == torch.float8_e4m3fn
    assert rel_err(fp8.eager(*inputs), fp8.reference(*inputs)) < TOL[torch.float16]


@pytest.mark.parametrize("op, D", [("decode_attention", 128), ("decode_attention_paged", 128),
                                   ("decode_attention_fp8", 128), ("decode_attention", 512),
                                   ("decode_attention_fp8", 512)])
def test_kernels_compile_for_sm90(op, D):
    """The kernel of a call (B = 1, 2 kv heads: split off a GPU too, merged by its last split), compiled for sm_90 as
    a GPU launch specialises it (no GPU needed; the interpreter does not type-check a jit helper's returns): one
    launch, no register spills (at D = 512 too: 16 query rows a program hold a 64-register accumulator a thread)."""
    from rooftop.profile.kernels import offline_kernels

    kernels = offline_kernels(op, (1, 8, 4096, D), "bf16")
    assert [k["kernel"] for k in kernels] == ["_decode_attention_kernel"]
    assert all(k["n_spills"] == 0 for k in kernels)


def test_default_splits():
    """One wave of resident programs (4 "SMs" off a GPU) over the tiles, at least MIN_SPLIT_KEYS keys a split."""
    cpu = torch.device("cpu")
    assert decode_mod.default_splits(1024, 4096, 2, cpu) == 1
    assert decode_mod.default_splits(1, 4096, 2, cpu) == 8
    assert decode_mod.default_splits(3, 4096, 4, cpu) == 5
    assert decode_mod.default_splits(1, 100, 32, cpu) == -(-100 // decode_mod.MIN_SPLIT_KEYS)
    assert decode_mod.default_splits(1, 10**7, 64, cpu) == decode_mod.MAX_SPLITS
    assert decode_mod.default_splits(8, 0, 2, cpu) == 1


@pytest.mark.parametrize("limit, stages", [(232448, 3), (101376, 2), (70000, 1), (10000, 1)])
def test_fitting_stages_steps_down_to_the_shared_memory(limit, stages, monkeypatch):
    """fitting_stages compiles with fewer stages until the kernel fits a program's shared memory (the split kernel at
    D = 128 in bf16 compiled for sm_90: 139264, 73728, 40960 B at 3, 2, 1 stages, where the 99 KB cards allow 101376;
    benchmarks/compile_targets.py), never below 1; off a GPU (no compile) the stages stay as given."""
    from rooftop.ops import _support
    shared = {3: 139264, 2: 73728, 1: 40960}
    compiled = lambda kernel, *args, **c: types.SimpleNamespace(
        device=0, compiled=types.SimpleNamespace(metadata=types.SimpleNamespace(shared=shared[c["num_stages"]])))
    monkeypatch.setattr(_support, "prepare", compiled)
    monkeypatch.setattr(_support, "shared_memory_limit", lambda index: limit)
    chosen, entry = _support.fitting_stages(None, 1, 2, BLOCK=16, num_stages=3)
    assert chosen == stages and entry.compiled.metadata.shared == shared[stages]
    monkeypatch.setattr(_support, "prepare", lambda kernel, *args, **c: None)
    assert _support.fitting_stages(None, 1, 2, BLOCK=16, num_stages=3) == (3, None)


# ---------------------------------------------------------------------------------------------
# fp8 caches


def _fp8_caches(k, v, k_scale, v_scale):
    """k, v (any float) as fp8 caches of codes of x / scale (quantize_kv), checked against e4m3's own rounding."""
    k8, v8 = quantize_kv(k, k_scale), quantize_kv(v, v_scale)
    for x, codes, scale in ((k, k8, k_scale), (v, v8, v_scale)):
        assert codes.dtype == FP8 and codes.shape == x.shape
        expect = (x.double() / scale).clamp(-448, 448)
        # nearest code: within half a step of e4m3's 3-bit mantissa (2^-9 at the bottom of the normal range)
        assert ((codes.double() - expect).abs() <= expect.abs() / 16 + 2.0**-9).all()
    return k8, v8


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("page_size, Sq, num_splits", [(None, 1, 1), (None, 3, 3), (16, 1, 3), (8, 2, 1)])
def test_fp8_caches_match_reference(dtype, page_size, Sq, num_splits, device):
    """Caches of fp8 codes with per-tensor scales (keys 3x a unit normal, so that the codes use e4m3's range): the
    keys and values each code times its scale, GQA, ragged lengths (one empty, one shorter than Sq)."""
    q, k, v, table = _inputs(3, 8, 2, Sq, 100, 64, torch.float32, device, page_size)
    k_scale, v_scale = 3 / 448, 0.02
    k8, v8 = _fp8_caches(3 * k, v, k_scale, v_scale)
    q, seqlens = q.to(dtype), _seqlens([100, 0, 2], device)
    out, lse = decode_attention(q, k8, v8, seqlens, table, num_splits=num_splits, return_lse=True, k_scale=k_scale,
                                v_scale=v_scale)
    ref, ref_lse = decode_attention_reference(q, k8, v8, seqlens, table, return_lse=True, k_scale=k_scale,
                                              v_scale=v_scale)
    assert_attention_result(out, lse, ref, ref_lse, q)
    # the scales are what the codes are multiplied by: a 16-bit cache of the dequantized values gives the same
    k16, v16 = (c.to(dtype) * s for c, s in ((k8, k_scale), (v8, v_scale)))
    assert rel_err(out, decode_attention(q, k16, v16, seqlens, table, num_splits=num_splits)) < TOL[dtype]


def test_fp8_caches_check_their_device(device, monkeypatch):
    """decode_attention and append_kv over fp8 caches check the device runs fp8 kernels (an A100 does not), naming
    k_cache, before any kernel; over 16-bit caches they do not ask."""
    def refuse(name, dev):
        raise RuntimeError(f"refused: {name}")
    monkeypatch.setattr(decode_mod, "check_fp8_device", refuse)
    q = torch.randn(2, 4, 1, 32, device=device, dtype=torch.bfloat16)
    k, v = (torch.randn(2, 2, 16, 32, device=device, dtype=torch.bfloat16) for _ in range(2))
    seqlens = _seqlens([3, 16], device)
    with pytest.raises(RuntimeError, match="refused: k_cache"):
        decode_attention(q, quantize_kv(k), quantize_kv(v), seqlens)
    with pytest.raises(RuntimeError, match="refused: k_cache"):
        append_kv(quantize_kv(k), quantize_kv(v), k[:, :, :1], v[:, :, :1], _seqlens([1, 2], device))
    decode_attention(q, k, v, seqlens)


@pytest.mark.parametrize("Sq, page_size, num_splits", [(1, None, 1), (2, 16, 3)])
def test_fp8_caches_with_a_mask_sinks_and_softcap(Sq, page_size, num_splits, device):
    """fp8 codes under a key mask, with sinks and a soft cap: k_scale is in the scores before the cap."""
    q, k, v, table = _inputs(2, 8, 2, Sq, 64, 64, torch.float32, device, page_size)
    k8, v8 = _fp8_caches(4 * k, v, 1 / 32, 1 / 64)
    q, seqlens = q.to(torch.bfloat16), _seqlens([64, 40], device)
    mask = torch.rand(2, 64, device=device) > 0.3
    sinks = torch.randn(8, device=device)
    _check(q, k8, v8, seqlens, table, num_splits, key_mask=mask, sinks=sinks, softcap=5.0, k_scale=1 / 32,
           v_scale=1 / 64)


@pytest.mark.parametrize("q_scale, k_scale", [(3e5, 1 / 64), (1e-6, 1e5), (1.0, 1 / 64)])
def test_fp8_caches_under_a_bf16_q_of_any_magnitude(q_scale, k_scale, device):
    """A bf16 q goes to fp16 for the dots over fp8 codes, scaled by a power of two: one past fp16's range (|q| up to
    ~1.5e6) or under its normal range (|q| ~1e-6, a large k_scale) gives the reference's scores still; an inf in one
    head's q makes that head's rows non-finite as in the reference, not its program's other heads'."""
    q, k, v, table = _inputs(2, 8, 2, 1, 64, 64, torch.float32, device, None)
    k8, v8 = _fp8_caches(k, v, 1 / 64, 1 / 64)
    q = (q * q_scale).to(torch.bfloat16)
    seqlens = _seqlens([64, 17], device)
    if q_scale == 1.0:
        q[0, 1, 0, 5] = float("inf")
    out, lse = decode_attention(q, k8, v8, seqlens, return_lse=True, k_scale=k_scale, v_scale=1 / 64)
    ref, ref_lse = decode_attention_reference(q, k8, v8, seqlens, return_lse=True, k_scale=k_scale, v_scale=1 / 64)
    finite = torch.isfinite(ref_lse)
    assert finite.sum() == (ref_lse.numel() - 1 if q_scale == 1.0 else ref_lse.numel())
    assert torch.equal(torch.isfinite(lse), finite)
    ok = finite[..., None].expand_as(q)
    assert rel_err(out[ok], ref[ok]) < TOL[torch.bfloat16] and rel_err(lse[finite], ref_lse[finite]) < 1e-5


@pytest.mark.parametrize("page_size", [None, 4])
def test_append_kv_fp8(page_size, device):
    """append_kv into fp8 caches writes quantize_kv's codes (saturated past e4m3's 448: rows of 1000 x a unit
    normal), the other rows kept; decode_attention then reads them with the same scales."""
    B, Hq, H, D, capacity, S = 2, 8, 2, 32, 32, 3
    q, k_cache, v_cache, table = _inputs(B, Hq, H, 1, capacity, D, torch.bfloat16, device, page_size=page_size)
    k_cache, v_cache = quantize_kv(k_cache, 0.1), quantize_kv(v_cache, 0.1)
    lengths = _seqlens([3, 9], device)
    expect = [k_cache.clone(), v_cache.clone(), lengths.clone()]
    for step in range(2):
        k, v = (torch.randn(B, H, S, D, device=device, dtype=torch.bfloat16) * (1000 if step else 1) for _ in range(2))
        append_kv(k_cache, v_cache, k, v, lengths, table, k_scale=0.5, v_scale=0.25)
        append_kv_reference(*expect[:2], k, v, expect[2], table, 0.5, 0.25)
        assert torch.equal(k_cache.view(torch.uint8), expect[0].view(torch.uint8))
        assert torch.equal(v_cache.view(torch.uint8), expect[1].view(torch.uint8))
        assert torch.equal(lengths, expect[2])
    assert k_cache.float().abs().max() == 448  # saturated, not inf or NaN
    out = decode_attention(q, k_cache, v_cache, lengths, table, k_scale=0.5, v_scale=0.25)
    assert rel_err(out, decode_attention_reference(q, k_cache, v_cache, lengths, table, k_scale=0.5,
                                                   v_scale=0.25)) < TOL[torch.bfloat16]


def test_fp8_bad_input(device):
    q = torch.randn(2, 4, 1, 32, device=device, dtype=torch.bfloat16)
    k, v = (torch.randn(2, 2, 16, 32, device=device, dtype=torch.bfloat16) for _ in range(2))
    k8, v8 = quantize_kv(k), quantize_kv(v)
    seqlens = _seqlens([3, 16], device)
    with pytest.raises(TypeError, match="v_scale is for torch.float8_e4m3fn caches; k_cache is torch.bfloat16"):
        decode_attention(q, k, v, seqlens, v_scale=0.5)
    with pytest.raises(ValueError, match="scale must be a positive finite float"):
        quantize_kv(k, 0.0)
    for bad in (0.0, -1.0, float("inf"), float("nan"), torch.tensor(0.5), True):
        with pytest.raises(ValueError, match="k_scale must be a positive finite float"):
            decode_attention(q, k8, v8, seqlens, k_scale=bad)
    with pytest.raises(ValueError, match="v_scale must be a positive finite float"):
        append_kv(k8, v8, k, v, _seqlens([1, 2], device), v_scale=-2.0)
    with pytest.raises(TypeError, match="v_cache has dtype torch.bfloat16 but k_cache has torch.float8_e4m3fn"):
        decode_attention(q, k8, v, seqlens)
    with pytest.raises(TypeError, match="k_cache has dtype float8_e5m2; expected one of .*float8_e4m3fn"):
        decode_attention(q, k8.view(torch.uint8).view(torch.float8_e5m2), v8, seqlens)
    cos, sin = (torch.ones(1, 32, device=device, dtype=torch.bfloat16) for _ in range(2))
    with pytest.raises(ValueError, match="k_scale must be a positive finite float"):
        rooftop.apply_rope_append_kv(q, k[:, :, :1], v[:, :, :1], cos, sin, k8, v8, _seqlens([1, 2], device),
                                     k_scale=float("nan"))
    with pytest.raises(TypeError, match="k_scale is for torch.float8_e4m3fn caches"):
        rooftop.apply_rope_append_kv(q, k[:, :, :1], v[:, :, :1], cos, sin, k, v, _seqlens([1, 2], device),
                                     k_scale=0.5)


# ---------------------------------------------------------------------------------------------
# On the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("page_size", [None, 16, 256])  # 256: whole key tiles a page
@pytest.mark.parametrize("Hq, Hkv, Sq, D", [(32, 8, 1, 128), (64, 8, 1, 128), (16, 16, 1, 64), (32, 8, 4, 128),
                                            (8, 1, 1, 256), (28, 4, 1, 96), (32, 4, 1, 512), (16, 2, 4, 512)])
def test_gpu_matches_reference(Hq, Hkv, Sq, D, page_size, dtype):
    lengths = [4096, 1, 0, 2999, 777]
    q, k, v, table = _inputs(len(lengths), Hq, Hkv, Sq, 4096, D, dtype, "cuda", page_size)
    _check(q, k, v, _seqlens(lengths, "cuda"), table)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("page_size", [None, 16, 256])
@pytest.mark.parametrize("Hq, Hkv, Sq, D", [(32, 8, 1, 128), (32, 8, 4, 128), (8, 1, 1, 256), (28, 4, 1, 96),
                                            (32, 4, 1, 512)])
def test_gpu_fp8_caches(Hq, Hkv, Sq, D, page_size, dtype):
    """fp8 caches at model sizes: appended by append_kv (a step of 4 rows after rows written by quantize_kv),
    read by decode_attention, against the reference over the same codes and scales."""
    lengths = [4096, 1, 0, 2999, 777]
    q, k, v, table = _inputs(len(lengths), Hq, Hkv, Sq, 4100, D, dtype, "cuda", page_size)
    k8, v8 = quantize_kv(2 * k, 2 / 448), quantize_kv(v, 1 / 448)
    seqlens = _seqlens([n - 4 if n >= 4 else n for n in lengths], "cuda")
    rows = torch.randn(len(lengths), Hkv, 4, D, device="cuda", dtype=dtype)
    append_kv(k8, v8, 2 * rows, rows, seqlens, table, k_scale=2 / 448, v_scale=1 / 448)
    assert torch.equal(seqlens, _seqlens([n if n >= 4 else n + 4 for n in lengths], "cuda"))
    out, lse = decode_attention(q, k8, v8, seqlens, table, return_lse=True, k_scale=2 / 448, v_scale=1 / 448)
    ref, ref_lse = decode_attention_reference(q, k8, v8, seqlens, table, return_lse=True, k_scale=2 / 448,
                                              v_scale=1 / 448)
    assert_attention_result(out, lse, ref, ref_lse, q)


@pytest.mark.gpu
def test_gpu_fewer_stages_on_a_card_with_less_shared_memory(monkeypatch):
    """On the H200 posing as a 99 KB card (A10, L40S, RTX 4090), the split kernel at D = 128 (3 stages: 139264 B)
    launches with 2 and matches the reference, where 3 would raise OutOfResources there."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "shared_memory_limit", lambda index: 101376)
    stages = []
    real = decode_mod.launch
    monkeypatch.setattr(decode_mod, "launch", lambda kernel, grid, *a, **c: stages.append(c["num_stages"])
                        or real(kernel, grid, *a, **c))
    lengths = [4096, 1, 2999]
    q, k, v, table = _inputs(len(lengths), 32, 8, 1, 4096, 128, torch.bfloat16, "cuda")
    _check(q, k, v, _seqlens(lengths, "cuda"), table)
    assert stages == [2]


@pytest.mark.gpu
@pytest.mark.parametrize("bounds", [False, True])
@pytest.mark.parametrize("page_size", [None, 16])
def test_gpu_key_mask(page_size, bounds):
    """Masks with holes, one with 1000 keys of left padding, one a range past 2000 keys (bounds: its mask not read)."""
    lengths = [4096, 3000, 1, 777, 4000]
    q, k, v, table = _inputs(len(lengths), 32, 8, 1, 4096, 128, torch.bfloat16, "cuda", page_size)
    mask = torch.rand(len(lengths), 4096, device="cuda") > 0.1
    mask[1, :1000] = False
    mask[4] = torch.arange(4096, device="cuda") >= 2000
    _check(q, k, v, _seqlens(lengths, "cuda"), table, key_mask=mask, bounds=bounds)


@pytest.mark.gpu
@pytest.mark.parametrize("bounds", [False, True])
@pytest.mark.parametrize("page_size", [None, 16])
@pytest.mark.parametrize("model", ["gpt-oss-20b", "gemma-2-9b"])
def test_gpu_sinks_and_softcap(model, page_size, bounds):
    """gpt-oss-20b's decode (64 query heads over 8 kv heads, D = 64) with bf16 sinks and a sliding window of 128;
    Gemma-2-9B's (16 over 8, D = 256) with its cap of 50 (scores pushed to it) and a window of 4096; bounds: the
    windows read as ranges (the tiles before them skipped)."""
    gpt_oss = model == "gpt-oss-20b"
    heads, D, window = (64, 64, 128) if gpt_oss else (16, 256, 4096)
    lengths = [8192, 6000, 1, 0]
    q, k, v, table = _inputs(len(lengths), heads, 8, 1, 8192, D, torch.bfloat16, "cuda", page_size)
    mask = torch.arange(8192, device="cuda") >= _seqlens(lengths, "cuda")[:, None] - window  # each one's window
    extra = dict(sinks=(torch.randn(heads, device="cuda") * 3).bfloat16()) if gpt_oss else dict(softcap=50.0)
    _check(q if gpt_oss else q * 8, k, v, _seqlens(lengths, "cuda"), table, key_mask=mask, bounds=bounds, **extra)


@pytest.mark.gpu
def test_gpu_cuda_graph_replays_as_the_cache_grows():
    """One capture; replays with longer sequences read the new lengths on the device (split ranges follow)."""
    q, k, v, table = _inputs(4, 32, 8, 1, 2048, 128, torch.bfloat16, "cuda", page_size=16)
    seqlens = _seqlens([1, 5, 100, 1000], "cuda")
    decode_attention(q, k, v, seqlens, table)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = decode_attention(q, k, v, seqlens, table)
    for lengths in ([2, 6, 101, 1001], [700, 2048, 1500, 3]):
        seqlens.copy_(_seqlens(lengths, "cuda"))
        q.copy_(torch.randn_like(q))
        graph.replay()
        assert rel_err(out, decode_attention_reference(q, k, v, seqlens, table)) < TOL[torch.bfloat16]


@pytest.mark.slow
def test_gpu_past_2_31_elements():
    """A contiguous cache of 2^31 + elements: 64-bit offsets. The last sequence is checked."""
    q, k, v, _ = _inputs(33, 8, 8, 1, 65536, 128, torch.bfloat16, "cuda")
    seqlens = torch.full((33,), 65536, dtype=torch.int32, device="cuda")
    out = decode_attention(q, k, v, seqlens)
    assert rel_err(out[-1:], decode_attention_reference(q[-1:], k[-1:], v[-1:], seqlens[-1:])) < TOL[torch.bfloat16]
