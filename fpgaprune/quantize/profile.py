"""Numerical profiling: the values that reach each quantizer or fixed-point type, against the range it holds.

In the style of hls4ml's profiling (`hls4ml.model.profiling`), without its pandas/seaborn and Keras 3 needs.
Every place where a range is limited is one row: a weight quantizer (the float weights it receives), an
activation quantizer (the pre-activation values it receives; for a ReLU quantizer, those above 0), and, after
export, each hls4ml type (the exact value the node should hold). A row keeps exact counts of the values
outside the range (clipped, or wrapped where the type wraps) and a bounded sample for the box plot.
"""

from dataclasses import asdict, dataclass, field

import numpy as np

SAMPLE = 20_000  # values kept per row for its quantiles; the counts are exact
QUANTILES = (0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0)


@dataclass
class ProfileRow:
    """Values reaching one limited range, over the held-out data (or a weight's entries)."""

    layer: str  # the user's layer name
    what: str  # "weights", "pre-activation", "input", "output"
    limit: str  # what limits them: a quantizer's text, or an hls4ml type (`ap_fixed<...>`)
    where: str  # "after QAT" (QKeras) or "after export" (hls4ml)
    lo: float
    hi: float
    count: int = 0
    below: int = 0
    above: int = 0
    quantiles: list = field(default_factory=list)  # QUANTILES of the values
    _sample: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _extremes: list = field(default_factory=lambda: [np.inf, -np.inf], repr=False)

    @property
    def clipped(self) -> float:
        """The fraction of values outside [lo, hi]."""
        return (self.below + self.above) / self.count if self.count else 0.0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, np.float64).ravel()
        if not values.size:
            return
        before = self.count
        self.count += values.size
        self.below += int(np.sum(values < self.lo))
        self.above += int(np.sum(values > self.hi))
        self._extremes = [min(self._extremes[0], float(values.min())), max(self._extremes[1], float(values.max()))]
        self._sample = _merged_sample(self._sample, before, values, np.random.default_rng(self.count))

    def finish(self) -> "ProfileRow":
        """Fix the quantiles (the ends are the exact extremes) and drop the sample."""
        if self.count:
            self.quantiles = [float(q) for q in np.quantile(self._sample, QUANTILES)]
            self.quantiles[0], self.quantiles[-1] = self._extremes
        self._sample = np.zeros(0)
        return self

    def to_json(self) -> dict:
        return {key: value for key, value in asdict(self).items() if not key.startswith("_")} | {
            "clipped": self.clipped
        }

    @classmethod
    def from_json(cls, data: dict) -> "ProfileRow":
        return cls(**{key: value for key, value in data.items() if key != "clipped"})

    def describe(self) -> str:
        side = "above" if self.above >= self.below else "below"
        edge = self.hi if side == "above" else self.lo
        return (
            f"{self.layer}: {self.clipped:.1%} of its {self.what} values lie {side} the {edge:g} that "
            f"{self.limit} holds ({self.where})"
        )


def _merged_sample(sample: np.ndarray, represented: int, values: np.ndarray, rng) -> np.ndarray:
    """A uniform sample of at most SAMPLE values of everything seen: `sample` stood for `represented` values."""
    if sample.size + values.size <= SAMPLE:
        return np.concatenate([sample, values])
    total = represented + values.size
    keep_old = min(sample.size, round(SAMPLE * represented / total))
    keep_new = min(values.size, SAMPLE - keep_old)
    return np.concatenate([rng.choice(sample, keep_old, replace=False), rng.choice(values, keep_new, replace=False)])


@dataclass
class Profile:
    """The rows of one model's profile, in layer order."""

    rows: list = field(default_factory=list)

    def over(self, threshold: float) -> list:
        """The rows with more than `threshold` of their values outside their range, worst first."""
        return sorted((row for row in self.rows if row.clipped > threshold), key=lambda row: -row.clipped)

    def to_json(self) -> list:
        return [row.to_json() for row in self.rows]

    @classmethod
    def from_json(cls, rows: list) -> "Profile":
        return cls([ProfileRow.from_json(row) for row in rows])


class ProfileCollector:
    """Builds a model's profile chunk by chunk from `LayerValues`, from the record of a bound model
    (`record.resolved`): after QAT (each quantizer's range) and, given the export's types ({hls4ml node:
    {variable: FixedType}}), after export."""

    def __init__(self, bound, hls_types: dict | None = None, input_type=None):
        self.record, self.types, self.input_type = bound.record, hls_types or {}, input_type
        self.rows: dict = {}
        self._weights()

    def _row(self, key, layer, what, limit, where, lo_hi) -> ProfileRow | None:
        if lo_hi is None:
            return None
        if key not in self.rows:
            self.rows[key] = ProfileRow(layer, what, str(limit), where, float(lo_hi[0]), float(lo_hi[1]))
        return self.rows[key]

    def _hls(self, node: str, variable: str):
        fixed = self.types.get(node, {}).get(variable)
        return (fixed.hls(), (fixed.lo, fixed.hi)) if fixed is not None else (None, None)

    def _weights(self) -> None:
        for layer in self.record.layers.values():
            for weight in layer.weights.values():
                if weight.quantizer is None or weight.scaled:
                    continue
                name = f"{layer.name}/{weight.name}"
                row = self._row(("qat", name), name, "weights", weight.quantizer, "after QAT", weight.range)
                if row is not None:
                    row.add(weight.received)
                limit, lo_hi = self._hls(layer.name, {"kernel": "weight"}.get(weight.name, weight.name))
                row = self._row(("hls", name), name, "weights", limit, "after export", lo_hi)
                if row is not None:
                    row.add(weight.quantized)

    def add(self, x: np.ndarray, values) -> None:
        """One chunk: the raw inputs `x` and the model's LayerValues for them."""
        if self.input_type is not None:
            fixed = self.input_type
            self._row(("hls", "input"), "input", "input", fixed.hls(), "after export", (fixed.lo, fixed.hi)).add(x)
        for name, layer in self.record.layers.items():
            if layer.inner_activation and name in values.pre_activations:
                activation = layer.activation
                self._activation(name, activation, values.pre_activations[name], f"{name}_{activation.class_name}")
                limit, lo_hi = self._hls(name, "accum")
                row = self._row(("hls", name, "accum"), name, "accumulator", limit, "after export", lo_hi)
                if row is not None:
                    row.add(values.pre_activations[name])
            elif name in values.layer_inputs:
                self._activation(name, layer.applies, values.layer_inputs[name], name)
            elif layer.kernel is not None and name in values.layer_outputs:
                limit, lo_hi = self._hls(name, "accum")
                row = self._row(("hls", name, "accum"), name, "accumulator", limit, "after export", lo_hi)
                if row is not None:
                    row.add(values.layer_outputs[name])

    def _activation(self, name: str, quantizer, values: np.ndarray, node: str) -> None:
        """The values an activation quantizer (its `record.ActivationRecord`) receives, against its range and its
        hls4ml node's type."""
        if quantizer is None or not quantizer.quantizer:  # a float activation (softmax, tanh): nothing limits it
            return
        if any(function in quantizer.class_name for function in ("tanh", "sigmoid")):
            return  # a tanh or sigmoid quantizer's range is its function's: beyond it, the function saturates
        arriving = np.maximum(values, 0.0) if quantizer.relu else values  # below 0 is a ReLU's function
        row = self._row(("qat", name, "act"), name, "pre-activation", quantizer.described, "after QAT", quantizer.range)
        if row is not None:
            row.add(arriving)
        limit, lo_hi = self._hls(node, "result")
        row = self._row(("hls", name, "act"), name, "pre-activation", limit, "after export", lo_hi)
        if row is not None:
            row.add(arriving)

    def profile(self) -> Profile:
        return Profile([row.finish() for row in self.rows.values()])
