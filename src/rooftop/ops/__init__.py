"""One file per operator family; importing this package registers every op."""
from rooftop.ops import (activations, attention, layer_norm, matmul, quant_matmul, reductions,  # noqa: F401
                         rms_norm, rope, softmax)
