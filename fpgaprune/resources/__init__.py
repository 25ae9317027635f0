"""Resources: estimates per layer and per kernel (rules.py, estimator.py, estimate.py), measured hardware
for the distributed-arithmetic option (yosys.py, calibration.py), and vendor reports (vendor.py)."""

from fpgaprune.resources.estimate import LayerEstimate, ResourceEstimate, estimate_resources
from fpgaprune.resources.estimator import Cost, KernelSaving

__all__ = ["Cost", "KernelSaving", "LayerEstimate", "ResourceEstimate", "estimate_resources"]
