"""The quantization report: bits per layer, which weights are zero and why, and the task's metric before and after."""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.frontends import front_end_of
from fpgaprune.masking import is_hold
from fpgaprune.selection import maskable_weights
from fpgaprune.text_table import format_rows

_COLUMNS = ("layer", "weight", "quantizer", "bits", "entries", "pruned", "quantized_to_zero", "nonzero")


@dataclass
class QuantizationReport:
    rows: list = field(default_factory=list)
    metric: str = "accuracy"
    float_score: float | None = None
    quantized_score: float | None = None
    task: object = None

    def format(self) -> str:
        lines = format_rows(_COLUMNS, [tuple(row[c] for c in _COLUMNS) for row in self.rows])
        if self.quantized_score is not None:
            shown = self.task.format_score if self.task is not None else (lambda value: f"{value:.2%}")
            before = f"float {shown(self.float_score)} -> " if self.float_score is not None else ""
            lines.append(f"{self.metric.replace('_', ' ')}: {before}quantized {shown(self.quantized_score)}")
        return "\n".join(lines)


def quantization_report(quantized, float_model=None, x=None, y=None, task=None) -> QuantizationReport:
    """Per quantized weight: its quantizer and bits, and how many entries are pruned (held at 0), quantized to
    0 though not pruned, and nonzero. With data, the metric of the float and the quantized model: the `task`'s
    (`fpgaprune.task.Task`), or the argmax accuracy of integer labels."""
    report = QuantizationReport()
    for layer in quantized.layers:
        front = front_end_of(layer)
        if not getattr(front, "is_quantized", lambda _: False)(layer):
            continue
        for weight in maskable_weights(layer) or ():
            variable, quantizer = weight.variable(layer), front.weight_quantizer(layer, weight.role)
            if variable is None or quantizer is None:
                continue
            values = np.asarray(quantizer(variable))
            pruned = _pruned_mask(variable)
            zero = values == 0
            report.rows.append(
                {
                    "layer": layer.name,
                    "weight": weight.name,
                    "quantizer": str(quantizer),
                    "bits": getattr(quantizer, "bits", "?"),
                    "entries": int(values.size),
                    "pruned": int(pruned.sum()),
                    "quantized_to_zero": int((zero & ~pruned).sum()),
                    "nonzero": int((~zero).sum()),
                }
            )
    if x is not None and y is not None:
        score = task.score if task is not None else _accuracy
        report.metric, report.task = (task.metric if task is not None else "accuracy"), task
        report.quantized_score = score(quantized.predict(x, verbose=0, batch_size=512), y)
        if float_model is not None:
            report.float_score = score(float_model.predict(x, verbose=0, batch_size=512), y)
    return report


def _pruned_mask(variable) -> np.ndarray:
    constraint = variable.constraint
    if not is_hold(constraint):
        return np.zeros(variable.shape, bool)
    mask, target = constraint.compiled(tuple(variable.shape))
    return mask & (target == 0)


def _accuracy(outputs, y) -> float:
    return float(np.mean(np.argmax(outputs, axis=1) == y))
