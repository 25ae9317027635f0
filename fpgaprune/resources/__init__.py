"""Resources: estimates per layer and per kernel (rules.py, estimator.py, estimate.py), measured hardware
for the distributed-arithmetic option (yosys.py, calibration.py), and vendor reports (vendor.py)."""

from fpgaprune.support.lazy import exports

_MODULES = {
    "LayerEstimate": "estimate",
    "ResourceEstimate": "estimate",
    "estimate_resources": "estimate",
    "Cost": "estimator",
    "KernelSaving": "estimator",
}
__getattr__ = exports(__name__, _MODULES)
__all__ = sorted(_MODULES)
