"""CPU tensors without Triton's interpreter (TRITON_INTERPRET unset: a model run on a CPU, or CPU tensors on a GPU
machine) take each op's PyTorch path. Each public op's result there must be its kernel's: the same values (within
the dtype's tolerance), shape, dtype, and the same in-place effects. The kernels run on the GPU where there is one,
else in the interpreter."""
import pytest
import torch

import rooftop
from conftest import DEVICE, TOL, rel_err
from rooftop.ops import _support
from rooftop.ops.rope import rotary_cos_sin

BF16 = torch.bfloat16


def _t(*shape, dtype=BF16):
    return torch.randn(*shape, dtype=dtype)


def _lengths(*values):
    return torch.tensor(values, dtype=torch.int32)


# name -> (a function of the inputs, the inputs as CPU tensors (or other arguments), made afresh for each test)
CALLS = {
    "softmax": (lambda x: rooftop.softmax(x), lambda: (_t(3, 100),)),
    "log_softmax": (lambda x: rooftop.log_softmax(x, dim=0), lambda: (_t(50, 7),)),
    "rms_norm": (lambda x, w, r: rooftop.rms_norm(x, w, 1e-6, residual=r, offset=1.0),
                 lambda: (_t(4, 96), _t(96), _t(4, 96))),
    "rms_norm_int8": (lambda x, w: rooftop.rms_norm(x, w, quant="int8"), lambda: (_t(4, 96), _t(96))),
    "fused_add_rms_norm_": (lambda x, r, w: rooftop.fused_add_rms_norm_(x, r, w, 1e-6),
                            lambda: (_t(4, 96), _t(4, 96), _t(96))),
    "layer_norm": (lambda x, w, b, r: rooftop.layer_norm(x, w, b, 1e-5, residual=r),
                   lambda: (_t(4, 96) + 10, _t(96), _t(96), _t(4, 96))),
    "fused_add_layer_norm_": (lambda x, r, w, b: rooftop.fused_add_layer_norm_(x, r, w, b, 1e-5),
                              lambda: (_t(4, 96), _t(4, 96), _t(96), _t(96))),
    "row_sum": (lambda x: rooftop.row_sum(x, out_dtype=torch.float32), lambda: (_t(5, 300),)),
    "row_max": (lambda x: rooftop.row_max(x), lambda: (_t(5, 300),)),
    "row_mean": (lambda x: rooftop.row_mean(x), lambda: (_t(5, 300),)),
    "row_norm": (lambda x: rooftop.row_norm(x), lambda: (_t(5, 300),)),
    "row_argmax": (lambda x: rooftop.row_argmax(x), lambda: (_t(5, 300),)),
    "swiglu": (lambda g, u: rooftop.swiglu(g, u), lambda: (_t(3, 80), _t(3, 80))),
    "geglu_packed": (lambda gu: rooftop.geglu(gu, approximate="tanh"), lambda: (_t(3, 160),)),
    "bias_gelu": (lambda x, b: rooftop.bias_gelu(x, b), lambda: (_t(3, 80), _t(80))),
    "apply_rope": (lambda q, k, cos, sin: rooftop.apply_rope(q, k, cos, sin, rotary_dim=32),
                   lambda: (_t(2, 4, 5, 64), _t(2, 2, 5, 64), *rotary_cos_sin(torch.arange(5) * 37, 32, dtype=BF16))),
    "apply_rope_inplace": (lambda q, k, cos, sin: rooftop.apply_rope(q, k, cos, sin, interleaved=True, inplace=True),
                           lambda: (_t(2, 4, 5, 64), _t(2, 2, 5, 64),
                                    *rotary_cos_sin(torch.arange(5), 64, dtype=BF16))),
    "apply_rope_append_kv": (lambda q, k, v, cos, sin, kc, vc, n: rooftop.apply_rope_append_kv(q, k, v, cos, sin, kc,
                                                                                                vc, n),
                             lambda: (_t(2, 4, 3, 32), _t(2, 2, 3, 32), _t(2, 2, 3, 32),
                                      *rotary_cos_sin(torch.arange(3) + 9, 32, dtype=BF16), _t(2, 2, 16, 32),
                                      _t(2, 2, 16, 32), _lengths(4, 11))),
    "append_kv": (lambda kc, vc, k, v, n: rooftop.append_kv(kc, vc, k, v, n),
                  lambda: (_t(2, 2, 16, 32), _t(2, 2, 16, 32), _t(2, 2, 3, 32), _t(2, 2, 3, 32), _lengths(0, 13))),
    "matmul": (lambda a, b, bias, r: rooftop.matmul(a, b, bias=bias, activation="silu", residual=r),
               lambda: (_t(33, 64), _t(64, 40), _t(40), _t(33, 40))),
    "attention": (lambda q, k, v: rooftop.attention(q, k, v, causal=True),
                  lambda: (_t(1, 4, 37, 32), _t(1, 2, 45, 32), _t(1, 2, 45, 32))),
    "decode_attention": (lambda q, kc, vc, n: rooftop.decode_attention(q, kc, vc, n, num_splits=2, return_lse=True),
                         lambda: (_t(2, 8, 1, 64), _t(2, 2, 70, 64), _t(2, 2, 70, 64), _lengths(70, 9))),
    "quant_matmul": (lambda x, w, bias: rooftop.quant_matmul(x, rooftop.quantize_weight(w, 4, 32), bias),
                     lambda: (_t(3, 64), _t(24, 64), _t(24))),
    "dequantize": (lambda w: rooftop.quantize_weight(w, 8, 64).dequantize(BF16), lambda: (_t(24, 128),)),
}


def _flat(result) -> list[torch.Tensor]:
    return [t for t in (result if isinstance(result, tuple) else (result,)) if t is not None]


@pytest.mark.parametrize("name", CALLS)
def test_pytorch_path_matches_the_kernels(name, monkeypatch):
    fn, make = CALLS[name]
    torch.manual_seed(0)
    inputs = make()
    on_device = tuple(t.to(DEVICE) if isinstance(t, torch.Tensor) else t for t in inputs)
    kernel_out = _flat(fn(*on_device))
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # rooftop reads it at each call: CPU tensors take the PyTorch path
    _support.clear_plans()  # (else, on a CPU, a call of the same signature replays the first's launches)
    torch_out = _flat(fn(*inputs))
    # the results, then every input (in-place ops and the caches' appends change theirs)
    for got, want in zip(torch_out + list(inputs), kernel_out + list(on_device)):
        if not isinstance(got, torch.Tensor):
            continue
        assert got.device.type == "cpu" and got.shape == want.shape and got.dtype == want.dtype
        if got.is_floating_point():
            assert rel_err(got, want.cpu()) < TOL[want.dtype]
        else:  # indices, lengths, int8 codes (a code may round the other way: one step at the most)
            assert (got.long() - want.cpu().long()).abs().max() <= (1 if got.dtype == torch.int8 else 0)
    assert len(torch_out) == len(kernel_out)
