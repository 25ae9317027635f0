"""Quantization: what quantized values need (fixed-point types), the quantized twin, the quantization report and
the numerical profile. The quantizers themselves belong to the front ends (`fpgaprune/frontends/qkeras`), which answer
what they are (`front_end_of(quantizer).quantizer_type(quantizer)`)."""

import importlib

from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.quantize.spec import QuantizationSpec, check_quantizer_text

_HERE = {"QuantizationReport": "report", "quantization_report": "report", "to_qkeras": "twin"}


def __getattr__(name: str):
    if name in _HERE:
        return getattr(importlib.import_module(f"fpgaprune.quantize.{_HERE[name]}"), name)
    raise AttributeError(f"module 'fpgaprune.quantize' has no attribute {name!r}")


__all__ = [
    "FixedType",
    "QuantizationSpec",
    "check_quantizer_text",
    "input_type",
    *_HERE,
]
