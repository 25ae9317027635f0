"""Numerical profiling: the values that reach each quantizer or fixed-point type, against the range it holds.

In the style of hls4ml's profiling (`hls4ml.model.profiling`), without its pandas/seaborn and Keras 3 needs.
Every place where a range is limited is one row: a weight quantizer (the float weights it receives), an
activation quantizer (the pre-activation values it receives; for a ReLU quantizer, those above 0), and, after
export, each hls4ml type (the exact value the node should hold). A row keeps exact counts of the values
outside the range (clipped, or wrapped where the type wraps) and a bounded sample for the box plot.
"""

from dataclasses import asdict, dataclass, field

import numpy as np

from fpgaprune.framework import front_end_of
from fpgaprune.quantize.layer_values import has_inner_activation
from fpgaprune.selection import maskable_weights

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


def quantizer_range(quantizer, front) -> tuple[float, float] | None:
    """[lo, hi] of what a quantizer outputs: its fixed-point type's, or else what it makes of a wide ramp (None
    when that is not finite); `front`: the front end of the quantizer's model."""
    fixed = front.quantizer_type(quantizer)
    if fixed is not None:
        return fixed.lo, fixed.hi
    own = front.quantizer_range(quantizer)
    if own is not None:
        return own
    ramp = np.concatenate([-np.logspace(-6, 6, 400)[::-1], [0.0], np.logspace(-6, 6, 400)]).astype(np.float32)
    out = front.quantize_array(quantizer, ramp)
    return (float(out.min()), float(out.max())) if np.all(np.isfinite(out)) else None


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


def _is_relu(quantizer, front) -> bool:
    """A ReLU quantizer (QKeras' quantized_relu, or any unsigned activation quantizer: below 0 is its function)."""
    fixed = front.quantizer_type(quantizer)
    return "relu" in type(quantizer).__name__ or (fixed is not None and not fixed.signed)


def _arriving(quantizer, values: np.ndarray, front) -> np.ndarray:
    """What a quantizer limits: for a ReLU quantizer the positive part (below 0 is its function, not a clip)."""
    return np.maximum(values, 0.0) if _is_relu(quantizer, front) else values


class ProfileCollector:
    """Builds a model's profile chunk by chunk from `LayerValues`: after QAT (each QKeras quantizer's range)
    and, given the export's types ({hls4ml node: {variable: FixedType}}), after export."""

    def __init__(self, model, hls_types: dict | None = None, input_type=None):
        self.model, self.types, self.input_type = model, hls_types or {}, input_type
        self.front = front_end_of(model)
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
        front = self.front
        for layer in front.layers(self.model):
            for weight in maskable_weights(layer) or ():
                variable, quantizer = weight.variable(layer), front.weight_quantizer(layer, weight.role)
                if variable is None or quantizer is None or front.has_channel_scale(quantizer):
                    continue
                name, values = f"{layer.name}/{weight.name}", np.asarray(front.folded(layer, weight.role, variable))
                row = self._row(
                    ("qat", name), name, "weights", quantizer, "after QAT", quantizer_range(quantizer, front)
                )
                if row is not None:
                    row.add(values)
                limit, lo_hi = self._hls(layer.name, {"kernel": "weight"}.get(weight.name, weight.name))
                row = self._row(("hls", name), name, "weights", limit, "after export", lo_hi)
                if row is not None:
                    row.add(front.quantized(layer, weight.role, variable))

    def add(self, x: np.ndarray, values) -> None:
        """One chunk: the raw inputs `x` and the model's LayerValues for them."""
        if self.input_type is not None:
            fixed = self.input_type
            self._row(("hls", "input"), "input", "input", fixed.hls(), "after export", (fixed.lo, fixed.hi)).add(x)
        for layer in self.front.layers(self.model):
            if has_inner_activation(layer) and layer.name in values.pre_activations:
                self._activation(
                    layer,
                    layer.activation,
                    values.pre_activations[layer.name],
                    f"{layer.name}_{type(layer.activation).__name__}",
                )
                limit, lo_hi = self._hls(layer.name, "accum")
                row = self._row(("hls", layer.name, "accum"), layer.name, "accumulator", limit, "after export", lo_hi)
                if row is not None:
                    row.add(values.pre_activations[layer.name])
            elif layer.name in values.layer_inputs:
                quantizer = self.front.activation_quantizer(layer)
                self._activation(layer, quantizer, values.layer_inputs[layer.name], layer.name)
            elif getattr(layer, "kernel", None) is not None and layer.name in values.layer_outputs:
                limit, lo_hi = self._hls(layer.name, "accum")
                row = self._row(("hls", layer.name, "accum"), layer.name, "accumulator", limit, "after export", lo_hi)
                if row is not None:
                    row.add(values.layer_outputs[layer.name])

    def _activation(self, layer, quantizer, values: np.ndarray, node: str) -> None:
        """The values an activation quantizer receives, against its range and its hls4ml node's type."""
        if not hasattr(quantizer, "get_config"):  # a float activation (softmax, tanh): nothing limits it
            return
        if any(function in type(quantizer).__name__ for function in ("tanh", "sigmoid")):
            return  # a tanh or sigmoid quantizer's range is its function's: beyond it, the function saturates
        arriving = _arriving(quantizer, values, self.front)
        row = self._row(
            ("qat", layer.name, "act"),
            layer.name,
            "pre-activation",
            quantizer,
            "after QAT",
            quantizer_range(quantizer, self.front),
        )
        if row is not None:
            row.add(arriving)
        limit, lo_hi = self._hls(node, "result")
        row = self._row(("hls", layer.name, "act"), layer.name, "pre-activation", limit, "after export", lo_hi)
        if row is not None:
            row.add(arriving)

    def profile(self) -> Profile:
        return Profile([row.finish() for row in self.rows.values()])
