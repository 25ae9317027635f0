"""hls4ml precisions for bit-exact C-simulation, derived from the QKeras quantizers, the weights and the input's
range: `derive.py` walks the model; `batchnorm.py`, `recurrent.py` and `merge.py` type those nodes; `plan.py`
holds the result. The export, the config merge and the budget's prices read it."""

from fpgaprune.hls.precision.derive import SOFTMAX_TYPES, TABLE_ACTIVATIONS, derive_precisions
from fpgaprune.hls.precision.plan import PrecisionPlan

__all__ = ["PrecisionPlan", "SOFTMAX_TYPES", "TABLE_ACTIVATIONS", "derive_precisions"]
