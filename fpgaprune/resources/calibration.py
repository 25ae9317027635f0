"""The LUT estimator of the distributed-arithmetic option, calibrated against yosys on one set of layers and
checked on another.

The estimator is `LUT = scale * cost`, where `cost` is da4ml's own cost of the layer's adder graph (its
count of adder bits). `fit` picks the scale by least squares on the calibration layers' yosys LUT counts;
`held_out_errors` reports the relative error on layers the fit did not see.
"""

from dataclasses import dataclass, field

import numpy as np

TARGET = 0.15  # the estimate should be within +-15% of yosys per layer


@dataclass
class Calibration:
    scale: float
    calibration_layers: list
    held_out: dict = field(default_factory=dict)  # layer -> (estimate, measured, relative error)

    def estimate(self, da4ml_cost: float) -> float:
        return self.scale * da4ml_cost

    @property
    def max_error(self) -> float:
        return max((abs(error) for _, _, error in self.held_out.values()), default=float("nan"))

    def format(self) -> str:
        lines = [f"DA LUT estimate = {self.scale:.3f} x da4ml cost (calibrated on "
                 f"{', '.join(self.calibration_layers)})"]
        for name, (estimate, measured, error) in self.held_out.items():
            lines.append(f"  held out {name}: estimate {estimate:.0f}, yosys {measured}, error {error:+.1%}")
        verdict = "within" if self.max_error <= TARGET else "outside"
        lines.append(f"  max held-out error {self.max_error:.1%} ({verdict} the +-{TARGET:.0%} target)")
        return "\n".join(lines)


def fit(measured: dict) -> Calibration:
    """`measured`: {layer: Synthesis}; the least-squares scale from da4ml cost to yosys LUTs."""
    costs = np.array([m.da4ml_cost for m in measured.values()], np.float64)
    luts = np.array([m.luts for m in measured.values()], np.float64)
    scale = float(costs @ luts / (costs @ costs))
    return Calibration(scale, list(measured))


def held_out_errors(calibration: Calibration, measured: dict) -> Calibration:
    """Fill in the relative error on layers that were not used to fit; refuses a calibration layer."""
    for name, synthesis in measured.items():
        if name in calibration.calibration_layers:
            raise ValueError(f"{name} was used for the calibration; a held-out layer must not be")
        estimate = calibration.estimate(synthesis.da4ml_cost)
        calibration.held_out[name] = (estimate, synthesis.luts, (estimate - synthesis.luts) / synthesis.luts)
    return calibration
