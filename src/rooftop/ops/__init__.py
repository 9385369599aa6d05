"""One file per operator family; importing this package registers every op."""
from rooftop.ops import (activations, attention, decode_attention, layer_norm, matmul, quant_matmul,  # noqa: F401
                         reductions, rms_norm, rope, softmax)
