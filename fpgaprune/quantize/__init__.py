"""Quantization: what quantized values need (fixed-point types), the quantized twin, the quantization report and
the numerical profile. The quantizers themselves belong to the front ends (`fpgaprune/frontends/qkeras`): the two
questions users ask of them are answered here by the quantizer's own front end, or the quantizing one's."""

import importlib

from fpgaprune.framework import front_end_of, quantizing_front_end
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS, QuantizationSpec, check_quantizer_text

_HERE = {"QuantizationReport": "report", "quantization_report": "report"}


def to_qkeras(model, spec=None, batchnorm: str = "fold"):
    """The quantized twin of `model` that QAT trains and hls4ml exports: same layer names, holds carried over
    (BatchNormalization folded unless batchnorm="quantize"). A tf_keras model becomes its QKeras model; a Keras 3
    model its tf_keras twin's (`frontends/keras3/twin.py`). `spec`: {"default": {role: quantizer text}, "layers":
    ...}; None: the built-in default (`DEFAULT_QUANTIZERS`) for float layers, a quantized layer's own kept."""
    spec = {"default": dict(DEFAULT_QUANTIZERS)} if spec is None else spec
    return front_end_of(model).quantized_twin(model, spec, batchnorm=batchnorm)


def quantizer_type(quantizer, activation: bool = False):
    """The fixed-point type (`FixedType`) of a quantizer's outputs, or None; its own front end answers."""
    return front_end_of(quantizer).quantizer_type(quantizer, activation)


def build_quantizer(text: str, where: str = "quantizer"):
    """The quantizing library's quantizer (QKeras') for one of fpgaprune's quantizer texts."""
    return quantizing_front_end().build_quantizer(text, where)


def __getattr__(name: str):
    if name in _HERE:
        return getattr(importlib.import_module(f"fpgaprune.quantize.{_HERE[name]}"), name)
    raise AttributeError(f"module 'fpgaprune.quantize' has no attribute {name!r}")


__all__ = [
    "FixedType",
    "QuantizationSpec",
    "check_quantizer_text",
    "input_type",
    "to_qkeras",
    "quantizer_type",
    "build_quantizer",
    *_HERE,
]
