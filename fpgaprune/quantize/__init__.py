"""Quantization: QKeras conversion with holds carried over, and what the quantizers mean for hls4ml."""

from fpgaprune.quantize.convert import Q_LAYERS, to_qkeras
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.quantize.qkeras_front import quantizer_type
from fpgaprune.quantize.quantizers import QuantizationSpec, build_quantizer, check_quantizer_text
from fpgaprune.quantize.report import QuantizationReport, quantization_report

__all__ = [
    "FixedType",
    "Q_LAYERS",
    "QuantizationReport",
    "QuantizationSpec",
    "build_quantizer",
    "check_quantizer_text",
    "input_type",
    "quantization_report",
    "quantizer_type",
    "to_qkeras",
]
