import json
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch

import rooftop.ops.attention as attention_mod
from conftest import DEVICE, HAS_CUDA, TOL, assert_attention_result, compiler_env, rel_err
from rooftop import registry
from rooftop.ops._support import Plans
from rooftop.ops.attention import (AttentionConfig, attention, attention_cost, attention_eager, attention_reference,
                                   attention_varlen, attention_varlen_reference, visible_pairs)


def _qkv(B, Hq, Hkv, Sq, Sk, D, dtype, device):
    q = torch.randn(B, Hq, Sq, D, device=device, dtype=dtype)
    k = torch.randn(B, Hkv, Sk, D, device=device, dtype=dtype)
    v = torch.randn(B, Hkv, Sk, D, device=device, dtype=dtype)
    return q, k, v


def _check(q, k, v, causal=False, window=None, scale=None, tol=None, sinks=None, softcap=None):
    out, lse = attention(q, k, v, causal, scale=scale, window=window, return_lse=True, sinks=sinks, softcap=softcap)
    ref, ref_lse = attention_reference(q, k, v, causal, scale=scale, window=window, return_lse=True, sinks=sinks,
                                       softcap=softcap)
    assert_attention_result(out, lse, ref, ref_lse, q, tol)
    return out, lse


# (B, Hq, Hkv, Sq, Sk, D, dtype): odd lengths, GQA ratios 1/4/8, Sq < Sk and Sq > Sk (causal: queries with no
# key), one query, head dims padded to the next power of two (40 -> 64, 72 -> 128)
CASES = [
    (1, 2, 2, 37, 37, 64, torch.float16),
    (2, 4, 1, 50, 50, 16, torch.bfloat16),
    (1, 8, 1, 33, 33, 16, torch.float16),
    (1, 2, 2, 20, 70, 64, torch.bfloat16),
    (1, 2, 2, 70, 20, 64, torch.float16),
    (1, 4, 2, 1, 45, 64, torch.bfloat16),
    (1, 2, 1, 29, 31, 40, torch.float32),
    (1, 2, 2, 24, 41, 72, torch.float16),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B, Hq, Hkv, Sq, Sk, D, dtype", CASES)
def test_matches_reference(B, Hq, Hkv, Sq, Sk, D, dtype, causal, device):
    _check(*_qkv(B, Hq, Hkv, Sq, Sk, D, dtype, device), causal)


def test_sdpa_semantics_when_lengths_match(device):
    """Equal lengths: SDPA's causal mask and default scale; without lse, out alone."""
    q, k, v = _qkv(1, 2, 2, 40, 40, 32, torch.float32, device)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert rel_err(attention(q, k, v, causal), ref.double()) < 1e-5


def test_queries_past_the_keys_see_nothing(device):
    """Causal with Sq > Sk: the first Sq - Sk queries see no key: out 0 and lse -inf, never NaN."""
    q, k, v = _qkv(1, 2, 2, 45, 12, 64, torch.float16, device)
    out, lse = _check(q, k, v, causal=True)
    assert torch.equal(out[:, :, :33], torch.zeros_like(out[:, :, :33]))
    assert torch.isneginf(lse[:, :, :33]).all() and torch.isfinite(lse[:, :, 33:]).all()


@pytest.mark.parametrize("causal, window, Sq, Sk", [
    (False, (5, 3), 40, 40),     # both edges masked: three loops
    (True, 7, 40, 40),           # sliding window (Mistral): left edge and diagonal
    (False, 9, 30, 50),          # left only, Sq < Sk
    (False, (0, 0), 33, 33),     # the diagonal alone
    (True, (3, None), 50, 20),   # Sq > Sk: queries with no key
    (False, (2, 1), 60, 10),     # windows that miss every key for most queries
    (False, (2**31 - 1, 2**31 - 1), 40, 40),  # bounds past every key, near int32's end: as unbounded
])
def test_windows(causal, window, Sq, Sk, device):
    _check(*_qkv(1, 2, 1, Sq, Sk, 64, torch.float16, device), causal, window=window)


# A tile of several query heads' rows (GQA): the interpreter's small one, and on a GPU a candidate of gpt-oss's shapes
PACKED = [AttentionConfig(32, 16, 4, 1, heads=2), AttentionConfig(32, 16, 4, 1, heads=4)] if not HAS_CUDA else [
    AttentionConfig(128, 64, 8, 3, heads=4), AttentionConfig(128, 32, 8, 3, heads=4), AttentionConfig(128, 32, 4, 3,
                                                                                                      heads=2),
    AttentionConfig(128, 128, 8, 2, heads=4), AttentionConfig(64, 64, 4, 3, heads=2)]
# The key range in one masked loop (single_loop): one head's rows and several heads' (the interpreter's small tiles;
# on a GPU the one-head candidates of gpt-oss's shapes and packed 32-key tiles)
SINGLE_LOOP = [AttentionConfig(32, 16, 4, 1, single_loop=True), AttentionConfig(32, 16, 4, 1, heads=2, single_loop=True)
               ] if not HAS_CUDA else [AttentionConfig(64, 64, 4, s, r, single_loop=True) for s, r in
                                       ((2, 96), (2, None), (3, None))] + [
    AttentionConfig(128, 32, 4, 3, heads=4, single_loop=True)]


def _force_config(monkeypatch, config):
    monkeypatch.setattr(attention_mod, "attention_configs", lambda *args, **kwargs: (config,))
    monkeypatch.setattr(attention_mod, "_plans", Plans())


@pytest.mark.parametrize("config", PACKED + SINGLE_LOOP, ids=str)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("causal, window, Sq, Sk, extra", [
    (True, 6, 37, 45, "sinks"), (False, (5, 3), 40, 40, None), (True, 127, 150, 150, "sinks"),
    (True, 3, 45, 12, None),  # queries that see no key: out 0, lse -inf
    (True, 9, 40, 40, "softcap"),
    (False, (40, 20), 70, 150, None),  # Sq < Sk, both edges: a single loop's whole tiles between masked ones
    *([(True, 300, 400, 400, "sinks"), (False, (100, 60), 300, 300, None)] if HAS_CUDA else [])])  # loops of 2+ tiles
def test_packed_heads(config, transposed, causal, window, Sq, Sk, extra, monkeypatch, device):
    """Tiles of several query heads' rows (each head's queries, with their sinks, soft cap and lse rows) match the
    reference; contiguous views (host descriptors) and Hugging Face's [B, S, H, D] memory (descriptors made in the
    kernel)."""
    _force_config(monkeypatch, config)
    q, k, v = _qkv(2, 8, 2, Sq, Sk, 64, torch.bfloat16, device)
    if transposed:
        q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    _check(q, k, v, causal, window=window, sinks=torch.randn(8, device=device) if extra == "sinks" else None,
           softcap=30.0 if extra == "softcap" else None)


@pytest.mark.parametrize("config", [PACKED[0], SINGLE_LOOP[-1]], ids=str)
def test_packed_heads_varlen(config, monkeypatch, device):
    """Packed tiles (in three loops or one) over packed sequences (descriptors made in the kernel per sequence), one
    with more queries than keys."""
    _force_config(monkeypatch, config)
    len_q, len_k = [5, 33, 17, 20], [9, 40, 17, 6]
    q = _packed(len_q, 8, 64, torch.bfloat16, device)
    k, v = (_packed(len_k, 2, 64, torch.bfloat16, device) for _ in range(2))
    sinks = torch.randn(8, device=device)
    cu_q, cu_k = _cu(len_q, device), _cu(len_k, device)
    out, lse = attention_varlen(q, k, v, cu_q, cu_k, 33, 40, True, window=6, return_lse=True, sinks=sinks)
    ref, ref_lse = attention_varlen_reference(q, k, v, cu_q, cu_k, True, window=6, sinks=sinks)
    assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5


def test_packed_heads_need_gqa_and_tma(monkeypatch, device):
    _force_config(monkeypatch, PACKED[-1])  # 2 heads a tile
    with pytest.raises(ValueError, match="query heads a k/v head serves \\(1\\)"):
        attention(*_qkv(1, 2, 2, 20, 20, 64, torch.float16, device), True, window=4)
    _force_config(monkeypatch, replace(PACKED[-1], block_n=64, single_loop=True))
    with pytest.raises(ValueError, match="in one loop: block_n must be <= 32"):
        attention(*_qkv(1, 8, 2, 20, 20, 64, torch.float16, device), True, window=4)
    _force_config(monkeypatch, PACKED[-1])
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", False)
    with pytest.raises(ValueError, match="needs TMA"):
        attention(*_qkv(1, 4, 2, 20, 20, 64, torch.float16, device), True, window=4)


def test_packed_candidates(monkeypatch):
    """Windowed GQA calls time the default first, then tiles of 4 and 2 heads with >= 32 queries each, the one-head
    list, and with single_loop last (D 64) the default's single-loop forms (2 stages with registers capped, 2 stages,
    its own), none twice; pack 2 offers 2 heads only, and pack 1 (no window, or MHA) the list as before."""
    monkeypatch.setattr(attention_mod, "shared_memory_limit", lambda index: 232448)
    plain = attention_mod.attention_configs(64, torch.bfloat16, 0, "masked")
    assert all(c.heads == 1 for c in plain)
    for pack, heads in ((4, {4, 2}), (2, {2})):
        found = attention_mod.attention_configs(64, torch.bfloat16, 0, "masked", pack=pack, single_loop=True)
        packed = [c for c in found if c.heads > 1 and not c.single_loop]
        assert found[0] == plain[0] and found[1:1 + len(packed)] == tuple(packed)
        assert {c.heads for c in packed} == heads and all(c.block_m // c.heads >= 32 for c in packed)
        assert [c for c in found if c.heads == 1 and not c.single_loop] == list(plain)
        single = replace(plain[0], single_loop=True)
        assert plain[0].num_stages == 3 and found[-3:] == (
            replace(single, num_stages=2, maxnreg=attention_mod.SINGLE_LOOP_MAXNREG), replace(single, num_stages=2),
            single)
        assert attention_mod.attention_configs(64, torch.bfloat16, 0, "masked", pack=pack) == found[:-3]
        assert len(set(found)) == len(found)
    assert attention_mod.attention_configs(64, torch.bfloat16, 0, "masked", single_loop=True) == plain
    # other head dims: measured at D 64 only, no single-loop form
    for block_d in (128, 256):
        assert not any(c.single_loop for c in attention_mod.attention_configs(
            block_d, torch.bfloat16, 0, "masked", pack=4, single_loop=True))


def test_sm90_mma_operands_not_clobbered(monkeypatch):
    """gpt-oss's window candidates (an H100's shared memory), compiled for sm_90 here (a child process, no GPU):
    none has an MMA register operand from before its key loop overwritten inside the loop; the packed 64-key tiles in
    one loop, wrong on an H100 in session 78 and refused, are flagged as long as ptxas 12.8 compiles them."""
    monkeypatch.setattr(attention_mod, "shared_memory_limit", lambda index: 232448)
    candidates = attention_mod.attention_configs(64, torch.bfloat16, 0, "masked", pack=4, single_loop=True)
    refused = [AttentionConfig(64, 64, 4, 3, heads=2, single_loop=True),
               AttentionConfig(128, 64, 4, 3, heads=4, single_loop=True)]
    child = subprocess.run([sys.executable, str(Path(__file__).with_name("sm90_attention_sass.py")),
                            json.dumps([asdict(c) for c in (*candidates, *refused)])],
                           capture_output=True, text=True, env=compiler_env(), timeout=600)
    assert child.returncode == 0 and child.stdout.strip(), child.stderr[-2000:]
    findings = json.loads(child.stdout.strip().splitlines()[-1])
    assert any(c.single_loop for c in candidates) and any(c.heads > 1 for c in candidates)
    assert {str(c): f for c, f in zip(candidates, findings) if f} == {}
    assert all(findings[len(candidates):]), "ptxas no longer overwrites q there: revisit PACKED_SINGLE_LOOP_MAX_BLOCK_N"


def test_packing_offered_to_windowed_gqa_calls(monkeypatch, device):
    """With PACK_WINDOWED_GQA, a call with a window asks for tiles of up to gcd(query heads a k/v head, 4) heads; calls
    without a window, or MHA, for one head; with the flag off, every call for one. Each passes SINGLE_LOOP_WINDOWED."""
    asked = []
    configs = attention_mod.attention_configs

    def spy(*args, pack=1, single_loop=False, **kwargs):
        asked.append((pack, single_loop))
        return configs(*args, **kwargs)
    monkeypatch.setattr(attention_mod, "attention_configs", spy)
    calls = [((1, 8, 2, 20, 20), 5), ((1, 4, 2, 20, 20), 5), ((1, 8, 2, 20, 20), None), ((1, 2, 2, 20, 20), 5)]
    for pack_flag, single_flag, expected in ((True, False, [4, 2, 1, 1]), (False, True, [1, 1, 1, 1])):
        monkeypatch.setattr(attention_mod, "PACK_WINDOWED_GQA", pack_flag)
        monkeypatch.setattr(attention_mod, "SINGLE_LOOP_WINDOWED", single_flag)
        monkeypatch.setattr(attention_mod, "_plans", Plans())
        asked.clear()
        for sizes, window in calls:
            attention(*_qkv(*sizes, 64, torch.float16, device), True, window=window)
        assert asked == [(pack, single_flag) for pack in expected]


def test_tuning_entries_keep_stored_choices():
    """One-head, three-loop configurations are stored without the heads and single_loop fields, as before they
    existed; packed or single-loop ones with them."""
    one, packed_single = AttentionConfig(128, 64, 8, 3), AttentionConfig(128, 32, 8, 3, heads=4, single_loop=True)
    assert attention_mod._tuning_entry(one) == dict(block_m=128, block_n=64, num_warps=8, num_stages=3, maxnreg=None,
                                                    kernel="triton")
    entry = attention_mod._tuning_entry(packed_single)
    assert entry["heads"] == 4 and entry["single_loop"]
    assert [AttentionConfig(**attention_mod._tuning_entry(c)) for c in (one, packed_single)] == [one, packed_single]


def _sinks_eager(q, k, v, sinks, seen):
    """gpt-oss's eager form (transformers' GptOssAttention) in float64: a column of sinks beside the masked scores,
    dropped after the softmax."""
    group = q.shape[1] // k.shape[1]
    keys, values = (t.double().repeat_interleave(group, 1) for t in (k, v))
    scores = (q.double() @ keys.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~seen, -float("inf"))
    column = sinks.double().view(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[2], 1)
    return torch.cat([scores, column], -1).softmax(-1)[..., :-1] @ values


@pytest.mark.parametrize("causal, window, Sq, Sk, dtype", [
    (False, None, 37, 37, torch.float16),      # dense
    (True, None, 40, 40, torch.bfloat16),      # gpt-oss's full layers
    (True, 8, 50, 50, torch.bfloat16),         # its sliding-window layers (window of 9 keys)
    (True, 6, 30, 70, torch.float32),          # a prefill after cached keys
    (True, None, 45, 12, torch.float16),       # causal Sq > Sk: queries with no key
])
def test_sinks(causal, window, Sq, Sk, dtype, device):
    """gpt-oss's attention sinks: a logit a query head that joins its softmax with no value, against gpt-oss's eager
    form; large sinks take most of the weight; a query that sees no key gets 0 and lse its sink; a sink of -inf is as
    none, and a query with neither gets 0 and -inf, not NaN; bf16 sinks (the model's dtype) as fp32 ones."""
    q, k, v = _qkv(2, 8, 2, Sq, Sk, 64, dtype, device)
    sinks = torch.randn(8, device=device) * 3
    sinks[0] = 6.0  # past a row's log-sum of its scores (~5 at most here): the sinks matter whatever the draw
    out, lse = _check(q, k, v, causal, window, sinks=sinks)
    left, right = attention_mod.window_bounds(window, causal)
    seen = attention_mod._visible(Sq, Sk, left, right, device)
    assert rel_err(out, _sinks_eager(q, k, v, sinks, seen)) < TOL[dtype]
    plain = attention(q, k, v, causal, window=window)
    assert rel_err(out, plain) > 0.01  # the sinks mattered
    blind = ~seen.any(-1)  # queries with no key
    assert torch.allclose(lse[:, :, blind], sinks[:, None].expand(-1, int(blind.sum())).float()[None].expand(2, -1, -1))
    assert not out[:, :, blind].any()
    off = sinks.clone()
    off[::2] = -float("inf")  # a head's sink switched off
    out, lse = _check(q, k, v, causal, window, sinks=off)
    assert rel_err(out[:, ::2], plain[:, ::2]) < TOL[dtype]
    assert torch.isneginf(lse[:, ::2, blind]).all()
    _check(q, k, v, causal, window, sinks=(sinks * 4).bfloat16())


@pytest.mark.parametrize("causal, window, Sq, Sk", [(False, None, 37, 37), (True, None, 40, 40), (True, 8, 50, 50),
                                                    (True, None, 45, 12)])
def test_softcap(causal, window, Sq, Sk, device):
    """Gemma 2's soft-capping (cap tanh(s / cap) before the mask) against Gemma 2's eager form in float64: scores
    pushed past the cap (q scaled up) come out capped, a small cap matters, queries with no key stay 0 / -inf; with
    sinks too; varlen."""
    q, k, v = _qkv(2, 4, 2, Sq, Sk, 64, torch.bfloat16, device)
    q = q * 4  # scores up to ~30: the cap of 5 bites
    out, lse = _check(q, k, v, causal, window, softcap=5.0)
    left, right = attention_mod.window_bounds(window, causal)
    seen = attention_mod._visible(Sq, Sk, left, right, device)
    eager = attention_eager(*(t.double() for t in (q, k, v)), causal, window=window, softcap=5.0)  # Gemma 2's form
    assert rel_err(out[:, :, seen.any(-1)], eager[:, :, seen.any(-1)]) < TOL[torch.bfloat16]
    assert rel_err(out, attention(q, k, v, causal, window=window)) > 0.01  # the cap mattered
    assert torch.isneginf(lse[:, :, ~seen.any(-1)]).all()
    _check(q, k, v, causal, window, softcap=1e6)  # a cap far past the scores: tanh's small-argument form, exact
    _check(q, k, v, causal, window, softcap=5.0, sinks=torch.randn(4, device=device) + 2)
    qp, kp = q[0].transpose(0, 1).contiguous(), k[0].transpose(0, 1).contiguous()
    cu_q, cu_k = _cu([Sq], device), _cu([Sk], device)
    packed = attention_varlen(qp, kp, kp, cu_q, cu_k, Sq, Sk, causal, window=window, softcap=5.0)
    ref, _ = attention_varlen_reference(qp, kp, kp, cu_q, cu_k, causal, window=window, softcap=5.0)
    assert rel_err(packed, ref) < TOL[torch.bfloat16]


def test_varlen_sinks(device):
    """Sinks over packed sequences (a sequence with no key: its queries 0 and their heads' sinks) match the dense
    op's on each sequence."""
    len_q, len_k = [5, 33, 4], [9, 33, 0]
    q = _packed(len_q, 4, 64, torch.bfloat16, device)
    k, v = (_packed(len_k, 2, 64, torch.bfloat16, device) for _ in range(2))
    sinks = torch.randn(4, device=device) * 3
    cu_q, cu_k = _cu(len_q, device), _cu(len_k, device)
    out, lse = attention_varlen(q, k, v, cu_q, cu_k, 33, 33, True, window=6, return_lse=True, sinks=sinks)
    ref, ref_lse = attention_varlen_reference(q, k, v, cu_q, cu_k, True, window=6, sinks=sinks)
    assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5
    qs, ks = slice(5, 38), slice(9, 42)
    dense = attention(q[qs].transpose(0, 1)[None], k[ks].transpose(0, 1)[None], v[ks].transpose(0, 1)[None],
                      True, window=6, sinks=sinks)
    assert rel_err(out[qs], dense[0].transpose(0, 1)) < TOL[torch.bfloat16]
    assert not out[38:].any() and torch.allclose(lse[:, 38:], sinks[:, None].expand(-1, 4))


def test_scale(device):
    _check(*_qkv(1, 2, 2, 20, 30, 64, torch.bfloat16, device), True, scale=0.3)


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("config", [AttentionConfig(16, 16, 4, 1), AttentionConfig(32, 16, 4, 1),
                                    AttentionConfig(16, 32, 4, 1)])
def test_paths_and_tiles(config, tma, monkeypatch, device):
    """Host-made descriptors and pointer loads;
    query tiles taller and shorter than key tiles; Sk a multiple of the key tile (one loop) or not."""
    if HAS_CUDA:
        pytest.skip("interpreter tile configs")
    monkeypatch.setattr(attention_mod, "INTERPRETER_CONFIG", config)
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", tma)
    monkeypatch.setattr(attention_mod, "_plans", Plans())  # plans made with another INTERPRETER_CONFIG
    _check(*_qkv(1, 2, 1, 40, 64, 64, torch.float16, device), False)
    _check(*_qkv(1, 2, 1, 40, 45, 64, torch.float16, device), True, window=(20, 0))


def test_repeated_calls_take_the_plan(monkeypatch, device):
    """A repeated call (same shapes, strides, dtypes, flags, alignment) launches the plan its first call
    left, on new data, with the same result as the slow path; dense and varlen."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    q, k, v = _qkv(1, 4, 2, 40, 45, 64, torch.float16, device)
    first, first_lse = attention(q, k, v, True, return_lse=True)
    assert len(attention_mod._plans) == 1
    again, again_lse = attention(q, k, v, True, return_lse=True)
    assert torch.equal(again, first) and torch.equal(again_lse, first_lse)
    q2, k2, v2 = _qkv(1, 4, 2, 40, 45, 64, torch.float16, device)
    _check(q2, k2, v2, causal=True)
    _check(q2, k2, v2, causal=True, scale=0.2)  # the scale is an argument of the plan, not part of its key
    assert len(attention_mod._plans) == 1
    len_q = [5, 33, 17]
    qp = _packed(len_q, 4, 64, torch.bfloat16, device)
    kp, vp = (_packed(len_q, 2, 64, torch.bfloat16, device) for _ in range(2))
    cu = _cu(len_q, device)
    slow = attention_varlen(qp, kp, vp, cu, cu, 33, 33, True)
    assert len(attention_mod._plans) == 2
    assert torch.equal(attention_varlen(qp, kp, vp, cu, cu, 33, 33, True), slow)
    qp2 = _packed(len_q, 4, 64, torch.bfloat16, device)
    ref, _ = attention_varlen_reference(qp2, kp, vp, cu, cu, True)
    assert rel_err(attention_varlen(qp2, kp, vp, cu, cu, 33, 33, True), ref) < TOL[torch.bfloat16]
    assert len(attention_mod._plans) == 2


def test_plans_follow_the_sinks_and_softcap(monkeypatch, device):
    """Sinks or none, the sinks' dtype (a plan's compiled kernel is specialised on their pointer's) and the soft cap
    (a value a plan holds) keep plans of their own; each repeated call (the plan's direct launch on a GPU) matches
    the reference, dense and varlen."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    q, k, v = _qkv(1, 4, 2, 20, 20, 64, torch.bfloat16, device)
    sinks = torch.randn(4, device=device) + 4
    for s in (None, sinks, sinks.bfloat16(), sinks, sinks.bfloat16(), None):
        _check(q, k, v, True, sinks=s)
    assert len(attention_mod._plans) == 3
    for cap in (30.0, 5.0, 30.0):  # the cap is the plan's: one a value
        _check(q, k, v, True, softcap=cap)
    assert len(attention_mod._plans) == 5
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    qp, kp = q[0].transpose(0, 1).contiguous(), k[0].transpose(0, 1).contiguous()
    cu = _cu([20], device)
    for s in (sinks, sinks.bfloat16(), sinks):
        out = attention_varlen(qp, kp, kp, cu, cu, 20, 20, True, sinks=s)
        ref, _ = attention_varlen_reference(qp, kp, kp, cu, cu, True, sinks=s)
        assert rel_err(out, ref) < TOL[torch.bfloat16]
    assert len(attention_mod._plans) == 2


def test_plans_follow_strides_and_alignment(monkeypatch, device):
    """Same shapes with other strides, or with a base off 16-byte alignment (TMA cannot take it), get a
    plan of their own: never one made for another layout."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    shape, strides = (1, 2, 33, 64), (2 * 33 * 72, 33 * 72, 72, 1)  # rows padded to 72: 144 bytes apart
    buf = torch.randn(3 * 2 * 33 * 72 + 8, device=device, dtype=torch.float16)

    def view(offset):  # q, k, v at `offset` elements into three slots of buf
        return tuple(buf.as_strided(shape, strides, offset + i * 2 * 33 * 72) for i in range(3))

    _check(*view(0), causal=True)
    _check(*view(1), causal=True)  # 2 bytes off: pointer loads
    _check(*view(8), causal=True)  # 16 bytes off: TMA again, the first plan
    plans = list(attention_mod._plans.values())
    # the aligned views' plan moves tiles by TMA (the Gluon kernel's on sm_90, else host-made descriptors); the
    # unaligned views' loads pointers
    assert len(plans) == 2 and isinstance(plans[1], attention_mod._Plan) and plans[1].descriptors is None
    assert isinstance(plans[0], attention_mod.attention_sm90.PingpongPlan) or plans[0].descriptors is not None
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in view(0))  # [B, S, H, D] memory
    _check(q, k, v, causal=True)
    assert len(attention_mod._plans) == 3


def test_untuned_choice_keeps_no_plan(monkeypatch, device):
    """With several candidates and none tuned (as in CUDA graph capture), the call runs the default and
    keeps no plan: a later call may tune. One candidate (the interpreter's) is final."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    candidates = (AttentionConfig(32, 16, 4, 1), AttentionConfig(16, 16, 4, 1))
    monkeypatch.setattr(attention_mod, "attention_configs", lambda *args, **kwargs: candidates)
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "1")  # tuning on, but deferred
    monkeypatch.setattr(attention_mod._autotune, "may_tune", lambda t: False)
    _check(*_qkv(1, 2, 2, 20, 20, 64, torch.float16, device), False)
    assert len(attention_mod._plans) == 0


def test_prepared_attention_runs_a_given_config(device):
    """What benchmarks/exp_attention.py times: one candidate, launched again and again."""
    q, k, v = _qkv(1, 2, 1, 40, 48, 64, torch.float16, device)
    run = attention_mod.prepared_attention(q, k, v, True, AttentionConfig(32, 16, 4, 1))
    for _ in range(2):
        assert rel_err(run(), attention_reference(q, k, v, True)) < TOL[torch.float16]
    # the untuned default first: the Gluon kernel's where it takes the call (sm_90), else the Triton kernel's
    pingpong = attention_mod._pingpong_applies(q, k, v, torch.empty_like(q), True, -1, 0, False)
    assert attention_mod.attention_candidates(q, k, v, True)[0] == attention_mod.attention_configs(
        64, torch.float16, 0 if HAS_CUDA else -1, "masked", pingpong=pingpong)[0]


@pytest.mark.parametrize("kind", ["one_loop", "masked", "pointer"])
@pytest.mark.parametrize("block_d", [16, 32, 64, 128, 256])
def test_tuning_candidates(kind, block_d):
    """The default first (where it passes), a short list of distinct configurations within the space
    whose tiles fit shared memory and whose registers are neither spilled nor idle; a GPU with less
    shared memory gets fewer, and one with too little the smallest configuration. Register-capped
    configurations leave room for a second program an SM."""
    smem = 232448  # H200, per program
    found = attention_mod.tuning_candidates(block_d, 2, kind, smem)
    assert 1 <= len(found) <= attention_mod.MAX_CANDIDATES and len(set(found)) == len(found)
    default = attention_mod.DEFAULT_CONFIGS[kind][block_d]
    whole = attention_mod.tuning_candidates(block_d, 2, kind, smem, None)
    assert whole[:len(found)] == found and (default not in whole or found[0] == default)
    for c in whole:
        assert attention_mod.smem_bytes(c, block_d, 2) + attention_mod.SMEM_RESERVE <= smem
        values = c.block_m * (block_d + c.block_n) / (32 * c.num_warps)
        assert attention_mod.MIN_VALUES_PER_THREAD <= values <= attention_mod.REGISTER_BUDGET[kind]
        if c.maxnreg is not None:  # two programs an SM: registers and shared memory for both
            assert kind != "pointer" and c.maxnreg * 32 * c.num_warps * 2 <= 65536
            assert values <= attention_mod.PAIRED_MAX_VALUES and c.num_stages == 2
            assert 2 * (attention_mod.smem_bytes(c, block_d, 2) + attention_mod.SMEM_RESERVE) <= smem
        assert (c.block_m, c.block_n, c.num_warps, c.num_stages) in [
            (m, n, w, s) for m in attention_mod.BLOCK_M_CHOICES for n in attention_mod.BLOCK_N_CHOICES
            for w in attention_mod.WARP_CHOICES for s in attention_mod.STAGE_CHOICES]
    assert len(attention_mod.tuning_candidates(block_d, 2, kind, 101376, None)) <= len(whole)  # sm_89
    assert attention_mod.tuning_candidates(block_d, 2, kind, 4096) == (AttentionConfig(64, 32, 4, 2),)


def test_strided_inputs(device):
    """q/k/v transposed from [B, S, H, D] (no copies: the kernel takes the strides; out comes back in
    the same memory layout), and views that TMA cannot address (rows 2 bytes off 16-byte alignment)."""
    q = torch.randn(2, 33, 4, 64, device=device, dtype=torch.float16).transpose(1, 2)  # [B, H, S, D] view
    k, v = (torch.randn(2, 30, 6, 64, device=device, dtype=torch.float16).transpose(1, 2)[:, 2:4, 1:]
            for _ in range(2))  # 2 of 6 kv heads, keys from position 1: rows still 16-byte aligned
    assert not q.is_contiguous() and q.stride(-1) == 1
    out, _ = _check(q, k, v, causal=True)
    assert out.stride(1) < out.stride(2)  # [B, S, H, D] memory, like q
    base = torch.randn(1, 2, 30, 72, device=device, dtype=torch.float16)
    q, k, v = base[..., 1:65], base[:, :, 3:, 5:69], base[:, :, 3:, 7:71]  # unaligned: pointer loads
    _check(q, k, v, causal=False)


def test_empty(device):
    q, k, v = _qkv(1, 2, 2, 0, 9, 16, torch.float16, device)
    out, lse = attention(q, k, v, return_lse=True)
    assert out.shape == (1, 2, 0, 16) and lse.shape == (1, 2, 0)
    assert attention(*_qkv(0, 2, 2, 5, 5, 16, torch.float16, device)).shape == (0, 2, 5, 16)
    q, k, v = _qkv(1, 2, 2, 5, 0, 16, torch.float16, device)  # no keys: zeros, -inf
    out, lse = attention(q, k, v, True, return_lse=True)
    assert torch.equal(out, torch.zeros_like(out)) and torch.isneginf(lse).all()
    sinks = torch.tensor([0.5, -2.0], device=device)  # no keys, with sinks: zeros, each head's sink
    out, lse = attention(q, k, v, True, return_lse=True, sinks=sinks)
    assert not out.any() and torch.equal(lse, sinks[None, :, None].expand(1, -1, 5))
    cu_q, cu_k = _cu([5], device), _cu([0], device)
    out, lse = attention_varlen(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), cu_q, cu_k, 5, 0,
                                return_lse=True, sinks=sinks)
    assert not out.any() and torch.equal(lse, sinks[:, None].expand(-1, 5))


def _packed(lengths, heads, D, dtype, device):
    return torch.randn(sum(lengths), heads, D, device=device, dtype=dtype)


def _cu(lengths, device):
    return torch.tensor([0] + lengths, device=device).cumsum(0).to(torch.int32)


@pytest.mark.parametrize("causal, window", [(False, None), (True, None), (True, 6)])
def test_varlen_matches_per_sequence(causal, window, device):
    """Three sequences of different lengths (one with more queries than keys), GQA 2:1: each is the
    dense attention of that sequence; tiles that straddle sequences must not mix them."""
    len_q, len_k = [5, 33, 17], [9, 33, 12]
    q = _packed(len_q, 4, 64, torch.bfloat16, device)
    k, v = (_packed(len_k, 2, 64, torch.bfloat16, device) for _ in range(2))
    cu_q, cu_k = _cu(len_q, device), _cu(len_k, device)
    out, lse = attention_varlen(q, k, v, cu_q, cu_k, max(len_q), max(len_k), causal, window=window, return_lse=True)
    assert out.shape == q.shape and lse.shape == (4, q.shape[0])
    ref, ref_lse = attention_varlen_reference(q, k, v, cu_q, cu_k, causal, window=window)
    assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5
    qs, ks = slice(5, 38), slice(9, 42)  # the middle sequence, through the dense op
    dense = attention(q[qs].transpose(0, 1)[None], k[ks].transpose(0, 1)[None], v[ks].transpose(0, 1)[None],
                      causal, window=window)
    assert rel_err(out[qs], dense[0].transpose(0, 1)) < TOL[torch.bfloat16]


def test_varlen_empty_sequences(device):
    """A sequence with no query and one with no key (its queries: 0, lse -inf); tiles past a short
    sequence exit."""
    len_q, len_k = [0, 7, 6], [4, 0, 10]
    q = _packed(len_q, 2, 16, torch.float16, device)
    k, v = (_packed(len_k, 2, 16, torch.float16, device) for _ in range(2))
    cu_q, cu_k = _cu(len_q, device), _cu(len_k, device)
    out, lse = attention_varlen(q, k, v, cu_q, cu_k, 7, 10, return_lse=True)
    ref, ref_lse = attention_varlen_reference(q, k, v, cu_q, cu_k)
    assert rel_err(out, ref) < TOL[torch.float16] and rel_err(lse, ref_lse) < 1e-5
    assert torch.equal(out[:7], torch.zeros_like(out[:7])) and torch.isneginf(lse[:, :7]).all()


def test_bad_input(device):
    q, k, v = _qkv(1, 4, 2, 8, 8, 32, torch.float16, device)
    with pytest.raises(TypeError, match="q has dtype int64"):
        attention(torch.ones(1, 4, 8, 32, dtype=torch.int64, device=device), k, v)
    with pytest.raises(TypeError, match="k has dtype"):
        attention(q, k.float(), v)
    with pytest.raises(ValueError, match="q must be 4-D"):
        attention(q[0], k, v)
    with pytest.raises(ValueError, match="v has shape"):
        attention(q, k, v[:, :, :5])
    with pytest.raises(ValueError, match="k has batch"):
        attention(q, k.expand(2, -1, -1, -1), v.expand(2, -1, -1, -1))
    with pytest.raises(ValueError, match="k has head_dim"):
        attention(q, k[..., :16], v[..., :16])
    with pytest.raises(ValueError, match="multiple of k's and v's 3 heads"):
        attention(q, *_qkv(1, 3, 3, 8, 8, 32, torch.float16, device)[1:])
    with pytest.raises(ValueError, match="head_dim 320"):
        attention(*_qkv(1, 2, 2, 4, 4, 320, torch.float16, device))
    with pytest.raises(ValueError, match="k is on meta"):
        attention(q, k.to("meta"), v.to("meta"))
    with pytest.raises(ValueError, match="q must have unit stride"):
        attention(q.transpose(2, 3).contiguous().transpose(2, 3), k, v)
    with pytest.raises(ValueError, match="scale"):
        attention(q, k, v, scale=0.0)
    with pytest.raises(TypeError, match="scale must be a Python float or int, got numpy.float32"):
        attention(q, k, v, scale=np.float32(0.5))
    with pytest.raises(ValueError, match="window right must be 0"):
        attention(q, k, v, causal=True, window=(4, 2))
    with pytest.raises(ValueError, match="window left"):
        attention(q, k, v, window=-3)
    with pytest.raises(TypeError, match="window must be"):
        attention(q, k, v, window=(1, 2, 3))
    with pytest.raises(ValueError, match=r"sinks must have shape \(4,\)"):
        attention(q, k, v, sinks=torch.zeros(2, device=device))
    with pytest.raises(TypeError, match="sinks"):
        attention(q, k, v, sinks=torch.zeros(4, dtype=torch.int32, device=device))
    for cap in (0.0, -1.0, float("inf"), 1e31, 1e-31, 10**400):
        with pytest.raises(ValueError, match="softcap must be a positive finite number"):
            attention(q, k, v, softcap=cap)
    with pytest.raises(TypeError, match="softcap"):
        attention(q, k, v, softcap="50")
    qp, kp = q[0].transpose(0, 1), k[0].transpose(0, 1)  # [8, H, 32]
    cu = torch.tensor([0, 8], dtype=torch.int32, device=device)
    with pytest.raises(TypeError, match="cu_seqlens_q must be a 1-D int32"):
        attention_varlen(qp, kp, kp, cu.long(), cu, 8, 8)
    with pytest.raises(ValueError, match="cu_seqlens_k has 3 entries"):
        attention_varlen(qp, kp, kp, cu, torch.tensor([0, 4, 8], dtype=torch.int32, device=device), 8, 8)
    with pytest.raises(ValueError, match="max_seqlen_k"):
        attention_varlen(qp, kp, kp, cu, cu, 8, -1)
    with pytest.raises(ValueError, match="q must be 3-D"):
        attention_varlen(q, kp, kp, cu, cu, 8, 8)


def test_compiles_without_graph_break():
    from torch._dynamo.testing import CompileCounterWithBackend

    def block(q, k, v, qp, kp, vp, cu, sinks):
        out = attention(q, k, v, causal=True)
        packed = attention_varlen(qp, kp, vp, cu, cu, 20, 20, causal=True)
        sunk = attention(q, k, v, causal=True, window=5, sinks=sinks)
        return out * 2.0, packed + 1.0, sunk

    q, k, v = _qkv(1, 4, 2, 20, 20, 32, torch.float16, DEVICE)
    qp, kp, vp = (t[0].transpose(0, 1).contiguous() for t in (q, k, v))
    cu = torch.tensor([0, 20], dtype=torch.int32, device=DEVICE)
    sinks = torch.randn(4, device=DEVICE) + 3
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    out, packed, sunk = torch.compile(block, backend=counter, fullgraph=True)(q, k, v, qp, kp, vp, cu, sinks)
    assert counter.frame_count == 1
    ref = attention_reference(q, k, v, causal=True)
    assert rel_err(out, 2.0 * ref) < TOL[torch.float16]
    assert rel_err(packed, ref[0].transpose(0, 1) + 1.0) < TOL[torch.float16]
    assert rel_err(sunk, attention_reference(q, k, v, causal=True, window=5, sinks=sinks)) < TOL[torch.float16]


def test_eager_form_matches_reference(device):
    q, k, v = _qkv(1, 4, 2, 30, 30, 32, torch.float32, device)
    for causal, window in ((False, None), (True, None), (True, 5)):
        assert rel_err(attention_eager(q, k, v, causal, window=window),
                       attention_reference(q, k, v, causal, window=window)) < 1e-5


@pytest.mark.parametrize("Sq, Sk, left, right", [(64, 64, -1, 0), (10, 50, -1, 0), (50, 10, -1, 0),
                                                 (40, 40, 7, 0), (30, 30, 3, 2), (20, 20, -1, -1)])
def test_cost_counts_visible_pairs(Sq, Sk, left, right):
    assert visible_pairs(Sq, Sk, left, right) == int(attention_mod._visible(Sq, Sk, left, right, "cpu").sum())


def test_cost_and_registry():
    cost = attention_cost((2, 16, 1024, 128), torch.bfloat16, causal=True)
    assert cost.flops == 4 * 2 * 16 * 128 * (1024 * 1025 // 2)
    assert cost.bytes == 4 * 2 * 16 * 1024 * 128 * 2
    assert attention_cost((2, 16, 1024, 128), torch.bfloat16).flops == 4 * 2 * 16 * 1024 * 1024 * 128
    for name in ("attention", "attention_causal", "attention_d64", "attention_d64_causal", "attention_d256",
                 "attention_d256_causal"):
        spec = registry.get(name)
        assert spec.family == "attention" and spec.x_key == "S"
        assert all(B * S == 16384 for B, _, S, _ in spec.cases)
        assert set(spec.peers) == {"sdpa_flash", "sdpa_cudnn", "sdpa_efficient"}
    spec = registry.get("attention_causal")
    inputs = spec.make_inputs((1, 2, 24, 128), torch.float16, DEVICE)
    assert rel_err(spec.run(*inputs), spec.reference(*inputs)) < TOL[torch.float16]
    if not HAS_CUDA:
        assert spec.peers["sdpa_flash"]() is None
    # gpt-oss's: 64 query heads over 8 kv heads, the k / v bytes of 8; causal, and a window of 128 keys a query
    assert attention_cost((1, 64, 1024, 64), torch.bfloat16, True, kv_heads=8).bytes == (128 + 16) * 1024 * 64 * 2
    windowed = attention_cost((1, 64, 1024, 64), torch.bfloat16, True, 127, kv_heads=8)
    assert windowed.flops == 4 * 64 * 64 * visible_pairs(1024, 1024, 127, 0) < 4 * 64 * 64 * 1024 * 128
    for name in ("attention_sinks", "attention_sinks_window128"):
        spec = registry.get(name)
        assert spec.family == "attention_sinks" and not spec.peers and all(H == 64 for _, H, _, _ in spec.cases)
        inputs = spec.make_inputs((1, 16, 150, 64), torch.bfloat16, DEVICE)
        assert inputs[1].shape == (1, 2, 150, 64) and inputs[3].shape == (16,)
        ref = spec.reference(*inputs)
        assert rel_err(spec.run(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs), ref) < TOL[torch.bfloat16]
        assert rel_err(spec.eager(*inputs[:3], inputs[3] - 30), ref) > 0.01  # the eager form reads the sinks


# ---------------------------------------------------------------------------------------------
# On the GPU


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128, 256])
def test_gpu_matches_sdpa_math_fp32(D, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = _qkv(2, 8, 8, 300, 300, D, torch.float32, "cuda")
    with sdpa_kernel(SDPBackend.MATH):
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    assert rel_err(attention(q, k, v, causal), ref) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128, 256, 96])
@pytest.mark.parametrize("S", [1024, 1000])  # one loop and a ragged last key tile
def test_gpu_16bit(S, D, causal, dtype):
    _check(*_qkv(2, 8, 4, S, S, D, dtype, "cuda"), causal)


@pytest.mark.gpu
def test_gpu_varlen_and_windows():
    len_q = [1000, 1, 513, 2048]
    q = _packed(len_q, 16, 128, torch.bfloat16, "cuda")
    k, v = (_packed(len_q, 4, 128, torch.bfloat16, "cuda") for _ in range(2))
    cu = _cu(len_q, "cuda")
    for causal, window in ((False, None), (True, None), (True, 256)):
        out, lse = attention_varlen(q, k, v, cu, cu, 2048, 2048, causal, window=window, return_lse=True)
        ref, ref_lse = attention_varlen_reference(q, k, v, cu, cu, causal, window=window)
        assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("window", [None, 127])
@pytest.mark.parametrize("S", [2048, 1000])
def test_gpu_sinks(S, window):
    """gpt-oss-20b's attention at prefill (64 query heads over 8 kv heads, D = 64, bf16 sinks; its full layers and
    its sliding-window ones) against the reference and its eager form."""
    q, k, v = _qkv(2, 64, 8, S, S, 64, torch.bfloat16, "cuda")
    sinks = (torch.randn(64, device="cuda") * 2).bfloat16()
    out, _ = _check(q, k, v, True, window=window, sinks=sinks)
    assert rel_err(out, attention_eager(q, k, v, True, window=window, sinks=sinks)) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("window", [None, 4095])
def test_gpu_softcap(window):
    """Gemma-2-9B's attention at prefill (16 query heads over 8 kv heads, D = 256, a cap of 50; its full layers and
    its sliding-window ones of 4096) against the reference, scores pushed to the cap."""
    q, k, v = _qkv(1, 16, 8, 4500, 4500, 256, torch.bfloat16, "cuda")
    _check(q * 8, k, v, True, window=window, softcap=50.0)


@pytest.mark.gpu
def test_gpu_pointer_path(monkeypatch):
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", False)
    for causal in (False, True):
        _check(*_qkv(2, 8, 2, 777, 777, 128, torch.bfloat16, "cuda"), causal)


@pytest.mark.gpu
def test_gpu_cuda_graph_capture():
    q, k, v = _qkv(2, 8, 8, 512, 512, 128, torch.bfloat16, "cuda")
    cu = torch.tensor([0, 300, 512], dtype=torch.int32, device="cuda")
    qp, kp, vp = (t[0].transpose(0, 1).contiguous() for t in (q, k, v))

    def step():
        return attention(q, k, v, True), attention_varlen(qp, kp, vp, cu, cu, 300, 300, True)

    step()  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, packed = step()
    for t in (q, k, v, qp, kp, vp):
        t.copy_(torch.randn_like(t))
    graph.replay()
    assert rel_err(out, attention_reference(q, k, v, True)) < TOL[torch.bfloat16]
    assert rel_err(packed, attention_varlen_reference(qp, kp, vp, cu, cu, True)[0]) < TOL[torch.bfloat16]


@pytest.mark.slow
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_long_sequence(causal):
    _check(*_qkv(1, 16, 16, 16384, 16384, 128, torch.bfloat16, "cuda"), causal)


@pytest.mark.slow
def test_gpu_past_2_31_elements():
    """q, k, v of 2^31 + elements each: 64-bit offsets. The last batch is checked."""
    q, k, v = _qkv(1025, 16, 16, 1024, 1024, 128, torch.bfloat16, "cuda")
    out = attention(q, k, v, True)
    assert rel_err(out[-1:], attention_reference(q[-1:], k[-1:], v[-1:], True)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_peak_memory():
    peaks = attention_mod.attention_peak_memory(S=4096)
    assert peaks["rooftop"] <= 2 * 16 * 4096 * 128 * 2  # out (and Triton's workspace), no score matrix
    assert peaks["eager"] > 16 * 4096 * 4096 * 2


# ---------------------------------------------------------------------------------------------
# The Gluon ping-pong path (sm_90)


def test_gluon_path_never_on_the_cpu(device):
    """Gluon has no interpreter: off a GPU (or in the interpreter) no ping-pong candidate is offered and
    the Triton kernel runs."""
    q, k, v = _qkv(1, 4, 1, 128, 128, 64, torch.bfloat16, device)
    if HAS_CUDA and torch.cuda.get_device_capability() == (9, 0):
        pytest.skip("an sm_90 GPU takes the Gluon path (test_gpu_gluon_dispatch)")
    assert all(c.kernel == "triton" for c in attention_mod.attention_candidates(q, k, v, True))
    assert not attention_mod._pingpong_applies(q, k, v, q, True, -1, 0, False)


def _sm90():
    if not HAS_CUDA or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon kernel needs an sm_90 GPU")


def _sdpa_math_fp32(q, k, v, causal, scale):
    """out by SDPA's math backend and lse by hand, both in float32; causal aligned bottom-right."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = q.float(), k.float(), v.float()
    Sq, Sk = q.shape[2], k.shape[2]
    hidden = torch.ones(Sq, Sk, dtype=torch.bool, device=q.device).triu(Sk - Sq + 1) if causal else None
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=None if hidden is None else ~hidden, scale=scale, enable_gqa=True)
    scores = q @ k.repeat_interleave(q.shape[1] // k.shape[1], 1).transpose(-1, -2) * scale
    if causal:
        scores = scores.masked_fill(hidden, float("-inf"))
    return out, torch.logsumexp(scores, -1)


def _gluon_path(monkeypatch, q, k, v, causal, scale=None, sinks=None):
    """attention(q, k, v, causal) with lse through each ping-pong configuration of q's head dim, each the
    untuned default in a fresh plan cache, against float32 SDPA (with sinks: the float64 reference); asserts
    the Gluon plan ran and its direct launch repeats the result. Returns the last out."""
    D = q.shape[-1]
    ref, ref_lse = (_sdpa_math_fp32(q, k, v, causal, scale or D**-0.5) if sinks is None else
                    attention_reference(q, k, v, causal, scale, return_lse=True, sinks=sinks))
    for config in attention_mod.PINGPONG_CONFIGS[D]:
        monkeypatch.setitem(attention_mod.PINGPONG_CONFIGS, D, (config,))
        monkeypatch.setattr(attention_mod, "_plans", Plans())
        out, lse = attention(q, k, v, causal, scale=scale, return_lse=True, sinks=sinks)
        (plan,) = attention_mod._plans.values()
        assert isinstance(plan, attention_mod.attention_sm90.PingpongPlan)
        assert out.shape == q.shape and lse.shape == q.shape[:3]
        assert not out.isnan().any() and not lse.isnan().any()
        assert rel_err(out, ref) < TOL[q.dtype], config
        assert rel_err(lse, ref_lse) < 1e-5, config
        again, _ = attention(q, k, v, causal, scale=scale, return_lse=True, sinks=sinks)  # the plan's direct launch
        assert torch.equal(again, out) and len(attention_mod._plans) == 1
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128, 256])
def test_gpu_gluon_sinks(D, causal, monkeypatch):
    """gpt-oss's sinks in the ping-pong kernel's epilogue, each configuration of the head dim, against the reference:
    a sink past a row's log-sum, one of -inf (as none), GQA 8, a ragged last tile, fewer queries than keys (a prefill
    after cached keys), fp32 and bf16 sinks (gpt-oss's); its plan's direct launch repeats."""
    _sm90()
    q, k, v = _qkv(2, 16, 2, 300, 300, D, torch.bfloat16, "cuda")
    sinks = torch.randn(16, device="cuda") * 2
    sinks[0], sinks[1] = 8.0, -float("inf")
    _gluon_path(monkeypatch, q, k, v, causal, sinks=sinks)
    _gluon_path(monkeypatch, q[:, :, :100], k, v, causal, sinks=sinks.bfloat16())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("group", [1, 4])
@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("S", [128, 384, 1024])
def test_gpu_gluon_matches_sdpa_math(S, D, group, causal, dtype, monkeypatch):
    """Each ping-pong configuration against float32 SDPA: one key tile to several ring passes, GQA 1 and
    4, causal (diagonal tiles masked, heaviest tiles first) or not, out and lse, a scale of its own."""
    _sm90()
    q, k, v = _qkv(2, 8, 8 // group, S, S, D, dtype, "cuda")
    _gluon_path(monkeypatch, q, k, v, causal, 0.3 if group == 4 else None)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("S", [1, 63, 200, 1000])
def test_gpu_gluon_any_length(S, D, causal, monkeypatch):
    """Lengths that are no multiple of a tile: the last key tile masked past the end (TMA read zeros
    there), query rows past the end computed on zeros and not stored (TMA clips out per head, lse is
    masked), a consumer warp group entirely past the end (S = 1, 63), GQA 4."""
    _sm90()
    _gluon_path(monkeypatch, *_qkv(2, 8, 2, S, S, D, torch.bfloat16, "cuda"), causal)


def _bshd(B, H, S, D, dtype, heads_stored=None):
    """A [B, H, S, D] view of [B, S, heads_stored, D] memory (Hugging Face's q.view(B, S, H, D).transpose(1, 2);
    heads_stored > H: the first H heads of a wider row, as in a packed qkv projection)."""
    t = torch.randn(B, S, heads_stored or H, D, device="cuda", dtype=dtype)
    return t[:, :, :H].transpose(1, 2)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("S", [256, 200])
def test_gpu_gluon_strided_layouts(S, D, causal, monkeypatch):
    """Any layout TMA can address, no copies: Hugging Face's transposed [B, S, H, D] views (out comes back
    in q's memory layout), heads sliced from a packed qkv row, q in one layout and k/v in another, a
    padded sequence stride; batch 1 (size-1 strides are not used)."""
    _sm90()
    dtype = torch.bfloat16
    hf = tuple(_bshd(2, H, S, D, dtype) for H in (8, 2, 2))
    out = _gluon_path(monkeypatch, *hf, causal)
    assert out.stride(1) < out.stride(2) and out.stride(-1) == 1  # [B, S, H, D] memory, like q
    qkv = torch.randn(2, S, 8 + 2 * 2, D, device="cuda", dtype=dtype)  # one fused projection's output
    packed = (qkv[:, :, :8].transpose(1, 2), qkv[:, :, 8:10].transpose(1, 2), qkv[:, :, 10:].transpose(1, 2))
    _gluon_path(monkeypatch, *packed, causal)
    contiguous_q = torch.randn(2, 8, S, D, device="cuda", dtype=dtype)
    _gluon_path(monkeypatch, contiguous_q, hf[1], hf[2], causal)
    padded = torch.randn(1, 8, S, D + 64, device="cuda", dtype=dtype)[..., :D]  # rows (D + 64) * 2 bytes apart
    _gluon_path(monkeypatch, hf[0][:1], padded[:, :2], padded[:, 2:4], causal)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D", [128, 256])
@pytest.mark.parametrize("Sq, Sk", [(128, 384), (200, 1000), (1, 300), (64, 65), (1000, 200), (300, 1)])
def test_gpu_gluon_unequal_lengths(Sq, Sk, D, causal, monkeypatch):
    """Sq != Sk (a prefill chunk after a cache): causal aligned bottom-right (query i at key position
    i + Sk - Sq), which the kernel takes for Sq <= Sk; Sq > Sk only dense (causal: the Triton kernel,
    test_gpu_gluon_dispatch)."""
    _sm90()
    if causal and Sq > Sk:
        pytest.skip("causal Sq > Sk leaves queries without keys: the Triton kernel's")
    q = torch.randn(2, 8, Sq, D, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(2, 2, Sk, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    _gluon_path(monkeypatch, q, k, v, causal)


@pytest.mark.gpu
def test_gpu_gluon_dispatch(monkeypatch):
    """The Gluon path for 16-bit dense or causal calls it supports (D 64 / 128 / 256, any lengths but
    causal Sq > Sk, any layout TMA can address), first (the untuned default) among the candidates; the
    Triton kernel for windows, varlen, causal Sq > Sk, other head dims, fp32, views TMA cannot address,
    with TMA off, and with GLUON_ENABLED off."""
    _sm90()

    def path(q, k, v, causal=False, window=None, sinks=None):
        monkeypatch.setattr(attention_mod, "_plans", Plans())
        _check(q, k, v, causal, window=window, sinks=sinks)
        (plan,) = attention_mod._plans.values()
        return "pingpong" if isinstance(plan, attention_mod.attention_sm90.PingpongPlan) else "triton"

    q, k, v = _qkv(1, 8, 2, 256, 256, 128, torch.bfloat16, "cuda")
    assert attention_mod.attention_candidates(q, k, v, True)[0] == attention_mod.PINGPONG_CONFIGS[128][0]
    assert path(q, k, v) == path(q, k, v, True) == "pingpong"
    assert path(*_qkv(1, 4, 4, 128, 128, 64, torch.float16, "cuda"), True) == "pingpong"
    assert path(*_qkv(1, 8, 2, 200, 200, 128, torch.bfloat16, "cuda")) == "pingpong"
    assert path(*_qkv(1, 8, 2, 1, 1, 64, torch.bfloat16, "cuda"), True) == "pingpong"
    q256, k256, v256 = _qkv(1, 8, 2, 300, 300, 256, torch.bfloat16, "cuda")
    assert attention_mod.attention_candidates(q256, k256, v256)[0] == attention_mod.PINGPONG_CONFIGS[256][0]
    assert path(q256, k256, v256, True) == "pingpong"
    qt, kt, vt = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))  # [B, S, H, D] memory
    assert path(qt, kt, vt, True) == "pingpong"
    assert path(q, k, v, True, window=64) == "triton"
    assert path(q, k, v, True, sinks=torch.randn(8, device="cuda")) == "pingpong"  # gpt-oss's full layers
    assert path(q, k, v, True, window=64, sinks=torch.randn(8, device="cuda")) == "triton"  # its sliding ones
    assert path(q, k, v, False, window=(32, 32)) == "triton"
    assert path(q[:, :, :100], k, v, True) == path(q, k[:, :, :100], v[:, :, :100]) == "pingpong"  # Sq != Sk
    assert path(q, k[:, :, :100], v[:, :, :100], True) == "triton"  # causal Sq > Sk: queries with no key
    assert path(*_qkv(1, 8, 2, 256, 256, 96, torch.bfloat16, "cuda")) == "triton"
    assert path(*(t.float() for t in (q, k, v))) == "triton"
    base = torch.randn(1, 8, 256, 136, device="cuda", dtype=torch.bfloat16)
    assert path(base[..., 1:129], base[:, :2, :, 2:130], base[:, 2:4, :, 3:131]) == "triton"  # 2 bytes off
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", False)
    assert path(q, k, v, True) == "triton"
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", True)
    monkeypatch.setattr(attention_mod, "GLUON_ENABLED", False)
    assert path(q, k, v, True) == "triton"
    monkeypatch.setattr(attention_mod, "GLUON_ENABLED", True)
    qp, kp, vp = (t[0].transpose(0, 1).contiguous() for t in (q, k, v))
    cu = torch.tensor([0, 256], dtype=torch.int32, device="cuda")
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    attention_varlen(qp, kp, vp, cu, cu, 256, 256, True)
    assert not any(isinstance(p, attention_mod.attention_sm90.PingpongPlan) for p in attention_mod._plans.values())


@pytest.mark.parametrize("D", [40, 80, 96])
def test_default_scale_is_one_over_sqrt_head_dim(D, device):
    """Padded head dims (40 -> 64): the default scale is SDPA's 1/sqrt(D), not that of the padded tile."""
    q, k, v = _qkv(1, 2, 2, 24, 24, D, torch.float32, device)
    for causal in (False, True):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert rel_err(attention(q, k, v, causal), ref.double()) < 1e-5


@pytest.mark.parametrize("D", [40, 72])
def test_pointer_path_padded_head_dim(D, monkeypatch, device):
    """Pointer loads (no TMA) with a head dim padded to the next power of two: the padding columns are masked
    in the masked and unmasked loops alike, and out's padding is never stored."""
    monkeypatch.setattr(attention_mod, "TMA_ENABLED", False)
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    _check(*_qkv(1, 2, 1, 40, 64, D, torch.float16, device), False)   # Sk a tile multiple: one unmasked loop
    _check(*_qkv(1, 2, 1, 40, 45, D, torch.float16, device), True, window=(20, 0))


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_total_keys_a_tile_multiple(causal, device):
    """Packed keys whose total is a multiple of the key tile: each sequence's end still masked."""
    len_q, len_k = [5, 20, 7], [9, 13, 10]  # 32 keys in all
    q = _packed(len_q, 4, 64, torch.bfloat16, device)
    k, v = (_packed(len_k, 2, 64, torch.bfloat16, device) for _ in range(2))
    cu_q, cu_k = _cu(len_q, device), _cu(len_k, device)
    out, lse = attention_varlen(q, k, v, cu_q, cu_k, max(len_q), max(len_k), causal, return_lse=True)
    ref, ref_lse = attention_varlen_reference(q, k, v, cu_q, cu_k, causal)
    assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5


def test_plan_key_holds_window_and_lse(monkeypatch, device):
    """Calls of one shape that differ only in window or in return_lse take plans of their own."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    q, k, v = _qkv(1, 2, 1, 40, 40, 64, torch.float16, device)
    for causal, window in [(False, None), (False, 7), (False, (3, 2)), (True, None), (True, 5)]:
        ref, ref_lse = attention_reference(q, k, v, causal, window=window, return_lse=True)
        assert rel_err(attention(q, k, v, causal, window=window), ref) < TOL[torch.float16], window
        out, lse = attention(q, k, v, causal, window=window, return_lse=True)
        assert rel_err(out, ref) < TOL[torch.float16] and rel_err(lse, ref_lse) < 1e-5, window


def test_prepared_attention_padded_head_dim(device):
    """A configuration run directly (the tuner's way) at a head dim padded from 40 to 64: the scale is 1 / sqrt(40)."""
    q, k, v = _qkv(1, 2, 1, 40, 48, 40, torch.float16, device)
    run = attention_mod.prepared_attention(q, k, v, True, attention_mod.AttentionConfig(32, 16, 4, 1))
    assert rel_err(run(), attention_reference(q, k, v, True)) < TOL[torch.float16]


def test_varlen_cu_seqlens_must_be_contiguous(device):
    q = torch.randn(8, 2, 32, device=device, dtype=torch.float16)
    cu = torch.tensor([0, 9, 4, 9, 8, 9], dtype=torch.int32, device=device)[::2]  # [0, 4, 8], stride 2
    with pytest.raises(ValueError, match="cu_seqlens_q must be contiguous"):
        attention_varlen(q, q, q, cu, cu.contiguous(), 4, 4)


def test_tma_needs_16_byte_row_strides(monkeypatch, device):
    """Rows 136 bytes apart on a 16-byte aligned base: TMA cannot address them (pointer loads)."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    q, k, v = (torch.randn(1, 2, 30, 68, device=device, dtype=torch.float16)[..., :64] for _ in range(3))
    assert q.data_ptr() % 16 == 0
    _check(q, k, v, causal=True)
    if not HAS_CUDA:  # on a GPU the plan is a compiled launch's
        [plan] = attention_mod._plans.values()
        assert isinstance(plan, attention_mod._Plan) and plan.descriptors is None and not plan.constexprs["USE_TMA"]


def test_varlen_plan_follows_max_seqlen(monkeypatch, device):
    """Same packed shapes and batch, another split: the longer max_seqlen_q needs more query tiles than the
    first call's plan launched."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    for len_q in ([20, 20, 15], [5, 33, 17]):  # 55 tokens each time
        q, k, v = (_packed(len_q, 2, 64, torch.bfloat16, device) for _ in range(3))
        cu = _cu(len_q, device)
        out, lse = attention_varlen(q, k, v, cu, cu, max(len_q), max(len_q), True, return_lse=True)
        ref, ref_lse = attention_varlen_reference(q, k, v, cu, cu, True)
        assert rel_err(out, ref) < TOL[torch.bfloat16] and rel_err(lse, ref_lse) < 1e-5, len_q


def test_grid_limit(monkeypatch, device):
    """A grid past CUDA's limit (here made 1) is refused by name (D = 40: the Triton kernel, on any GPU)."""
    monkeypatch.setattr(attention_mod, "_plans", Plans())
    monkeypatch.setattr(attention_mod, "MAX_PROGRAMS", 1)
    with pytest.raises(ValueError, match="grid limit"):
        attention(*_qkv(1, 2, 2, 40, 40, 40, torch.float16, device))  # 2 heads x at least one query tile
