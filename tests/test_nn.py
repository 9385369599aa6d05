"""Drop-in modules: same parameters and outputs as torch.nn's, fused residual form, swapping in place."""
import pytest
import torch
from torch import nn

import rooftop.nn as rnn
from conftest import DEVICE, TOL, rel_err


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_module_matches_torch(dtype):
    ref = nn.RMSNorm(1000, eps=1e-6, device=DEVICE, dtype=dtype)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
    mod = rnn.RMSNorm(1000, eps=1e-6, device=DEVICE, dtype=dtype)
    mod.load_state_dict(ref.state_dict())
    x = torch.randn(3, 5, 1000, device=DEVICE, dtype=dtype)
    with torch.no_grad():
        expected = nn.functional.rms_norm(x.double(), (1000,), ref.weight.double(), 1e-6)
        assert rel_err(mod(x), expected) < TOL[dtype]
        res = torch.randn_like(x)
        y, r = mod(x, res)
        assert rel_err(r, x.double() + res.double()) < TOL[dtype]
        assert rel_err(y, nn.functional.rms_norm(r.double(), (1000,), ref.weight.double(), 1e-6)) < TOL[dtype]


def test_rms_norm_module_default_eps_and_gemma_offset():
    x = torch.randn(4, 256, device=DEVICE)
    mod = rnn.RMSNorm(256, device=DEVICE)  # eps None: the dtype's epsilon, as torch
    with torch.no_grad():
        assert rel_err(mod(x), nn.RMSNorm(256, device=DEVICE)(x).double()) < TOL[torch.float32]
        gemma = rnn.RMSNorm(256, eps=1e-6, offset=1.0, device=DEVICE)
        gemma.weight.uniform_(-0.5, 0.5)
        expected = nn.functional.rms_norm(x.double(), (256,), 1.0 + gemma.weight.double(), 1e-6)
        assert rel_err(gemma(x), expected) < TOL[torch.float32]


@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_module_matches_torch(bias):
    ref = nn.LayerNorm(777, bias=bias, device=DEVICE, dtype=torch.float16)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        if bias:
            ref.bias.uniform_(-1, 1)
    mod = rnn.LayerNorm(777, bias=bias, device=DEVICE, dtype=torch.float16)
    mod.load_state_dict(ref.state_dict())
    x = torch.randn(6, 777, device=DEVICE, dtype=torch.float16)
    with torch.no_grad():
        expected = nn.functional.layer_norm(x.double(), (777,), ref.weight.double(),
                                            ref.bias.double() if bias else None, 1e-5)
        assert rel_err(mod(x), expected) < TOL[torch.float16]


def test_swap_norms_keeps_parameters_and_outputs():
    model = nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.Sequential(nn.RMSNorm(64, eps=1e-6)),
                          nn.LayerNorm((4, 16))).to(DEVICE)
    x = torch.randn(3, 4, 64, device=DEVICE).view(3, 4, 64)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(0.5, 1.5)
        before = model[:3](x)
        assert rnn.swap_norms(model) == 2  # the 2-D LayerNorm stays torch's
        assert isinstance(model[1], rnn.LayerNorm) and isinstance(model[2][0], rnn.RMSNorm)
        assert isinstance(model[3], nn.LayerNorm)
        assert rel_err(model[:3](x), before.double()) < 1e-5


def test_bad_normalized_shape():
    with pytest.raises(ValueError, match="normalized_shape must be one dimension"):
        rnn.RMSNorm((4, 16))


def test_nn_modules_use_their_eps():
    x = 0.05 * torch.randn(4, 64, device=DEVICE)
    with torch.no_grad():
        rms = rnn.RMSNorm(64, eps=0.5, device=DEVICE)
        assert rel_err(rms(x), nn.functional.rms_norm(x.double(), (64,), None, 0.5)) < 1e-5
        ln = rnn.LayerNorm(64, eps=0.5, device=DEVICE)
        assert rel_err(ln(x), nn.functional.layer_norm(x.double(), (64,), None, None, 0.5)) < 1e-5


def test_swap_norms_keeps_eps():
    model = nn.Sequential(nn.LayerNorm(64, eps=0.5), nn.RMSNorm(64, eps=0.5)).to(DEVICE)
    x = 0.05 * torch.randn(3, 64, device=DEVICE)
    with torch.no_grad():
        before = model(x)
        assert rnn.swap_norms(model) == 2
        assert rel_err(model(x), before.double()) < 1e-5


def test_layer_norm_module_fuses_the_residual():
    mod = rnn.LayerNorm(64, device=DEVICE)
    x, res = torch.randn(3, 64, device=DEVICE), torch.randn(3, 64, device=DEVICE)
    with torch.no_grad():
        y, r = mod(x, res)
        assert rel_err(r, x.double() + res.double()) < 1e-6
        assert rel_err(y, nn.functional.layer_norm((x + res).double(), (64,))) < 1e-5
