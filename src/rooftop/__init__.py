"""rooftop: fused Triton operators for LLM inference that know their own cost.

Functional API: tensors in, tensors out; CUDA tensors run the Triton kernels, CPU tensors run them in
Triton's interpreter when TRITON_INTERPRET=1, else the plain PyTorch reference.
"""
from rooftop.ops.rms_norm import fused_add_rms_norm_, rms_norm
from rooftop.ops.softmax import log_softmax, softmax

__all__ = ["softmax", "log_softmax", "rms_norm", "fused_add_rms_norm_"]
__version__ = "0.1.0"
