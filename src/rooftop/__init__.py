"""rooftop: fused Triton operators for LLM inference that know their own cost.

Functional API: tensors in, tensors out; CUDA tensors run the Triton kernels, CPU tensors run them in
Triton's interpreter when TRITON_INTERPRET=1, else the plain PyTorch reference.
"""
from rooftop.ops.activations import bias_gelu, geglu, quantize_rows, swiglu
from rooftop.ops.attention import attention, attention_varlen
from rooftop.ops.decode_attention import append_kv, decode_attention, key_mask_bounds
from rooftop.ops.layer_norm import fused_add_layer_norm_, layer_norm
from rooftop.ops.matmul import Fp8Linear, fp8_linear, matmul, matmul_fp8
from rooftop.ops.moe import moe_experts
from rooftop.ops.quant_matmul import (QuantizedWeight, QuantLinear, quant_matmul, quantize_model,
                                      quantize_weight)
from rooftop.ops.reductions import row_argmax, row_max, row_mean, row_norm, row_sum
from rooftop.ops.rms_norm import fused_add_rms_norm_, rms_norm
from rooftop.ops.rope import apply_rope, apply_rope_append_kv
from rooftop.ops.softmax import log_softmax, softmax

__all__ = ["softmax", "log_softmax", "rms_norm", "fused_add_rms_norm_", "layer_norm", "fused_add_layer_norm_",
           "swiglu", "geglu", "bias_gelu", "quantize_rows", "apply_rope", "apply_rope_append_kv", "row_sum",
           "row_max", "row_mean", "row_norm", "row_argmax", "matmul", "matmul_fp8", "attention", "attention_varlen",
           "decode_attention", "append_kv", "key_mask_bounds", "quantize_weight", "quant_matmul", "QuantizedWeight",
           "QuantLinear", "quantize_model", "Fp8Linear", "fp8_linear", "moe_experts"]
__version__ = "0.1.0"
