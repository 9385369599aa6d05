"""One file per operator family; importing this package registers every op."""
from rooftop.ops import (activations, attention, decode_attention, layer_norm, matmul, moe,  # noqa: F401
                         quant_matmul, reductions, rms_norm, rope, softmax)
