"""Quantization: QKeras conversion with holds carried over, and what the quantizers mean for hls4ml."""

from fpgaprune.quantize.convert import Q_LAYERS, to_qkeras
from fpgaprune.quantize.quantizers import QuantizationSpec, build_quantizer, check_quantizer_text

__all__ = ["Q_LAYERS", "QuantizationSpec", "build_quantizer", "check_quantizer_text", "to_qkeras"]
