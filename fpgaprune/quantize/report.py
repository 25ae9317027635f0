"""The quantization report: bits per layer, which weights are zero and why, and the task's metric before and after."""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.masking import maskable_records
from fpgaprune.record import resolved
from fpgaprune.support.text_table import format_rows

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
    (`fpgaprune.model.task.Task`), or the argmax accuracy of integer labels."""
    report, bound = QuantizationReport(), resolved(quantized)
    for layer, weight in maskable_records(bound.record):
        if not layer.quantized or weight.quantizer is None:
            continue
        pruned = weight.pruned if weight.pruned is not None else np.zeros(weight.shape, bool)
        zero = weight.quantized == 0
        report.rows.append(
            {
                "layer": layer.name,
                "weight": weight.name,
                "quantizer": weight.quantizer,
                "bits": weight.bits,
                "entries": int(zero.size),
                "pruned": int(pruned.sum()),
                "quantized_to_zero": int((zero & ~pruned).sum()),
                "nonzero": int((~zero).sum()),
            }
        )
    if x is not None and y is not None:
        score = task.score if task is not None else _accuracy
        report.metric, report.task = (task.metric if task is not None else "accuracy"), task
        report.quantized_score = score(bound.front.predict(bound.model, x, batch_size=512), y)
        if float_model is not None:
            reference = resolved(float_model)
            report.float_score = score(reference.front.predict(reference.model, x, batch_size=512), y)
    return report


def _accuracy(outputs, y) -> float:
    return float(np.mean(np.argmax(outputs, axis=1) == y))
