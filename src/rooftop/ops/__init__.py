"""One file per operator family; importing this package registers every op."""
from rooftop.ops import rms_norm, softmax  # noqa: F401
