"""The split path of add + RMSNorm for wide rows (rows over programs that wait for each other; GPU
only: the interpreter runs programs one after another): more rows than SMs, a ragged last chunk, in
place, quantized, and the arrival counters left at zero for the next launch."""
import pytest
import torch

import rooftop
from rooftop.ops import _support
from rooftop.ops.rms_norm import add_rms_norm_reference
from conftest import TOL, rel_err

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

