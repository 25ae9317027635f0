"""Quantization: what quantized values need (fixed-point types), the quantized twin, the quantization report and
the numerical profile. The quantizers themselves belong to the quantizing front end (`fpgaprune/frontends/qkeras`);
its names are re-exported here, on first use, under the names users already know."""

import importlib

from fpgaprune.quantize.fixed_types import FixedType, input_type

_FROM_FRONT_END = ("quantizer_type", "QuantizationSpec", "build_quantizer", "check_quantizer_text")
_HERE = {"QuantizationReport": "report", "quantization_report": "report"}


def to_qkeras(model, spec, batchnorm: str = "fold"):
    """The quantized twin of `model` that QAT trains and hls4ml exports: same layer names, holds carried over
    (BatchNormalization folded unless batchnorm="quantize"). A tf_keras model becomes its QKeras model; a Keras 3
    model its tf_keras twin's (`frontends/keras3/twin.py`)."""
    from fpgaprune.framework import front_end_of

    return front_end_of(model).quantized_twin(model, spec, batchnorm=batchnorm)


def __getattr__(name: str):
    if name in _FROM_FRONT_END:
        from fpgaprune.framework import quantizing_front_end

        return getattr(quantizing_front_end(), name)
    if name in _HERE:
        return getattr(importlib.import_module(f"fpgaprune.quantize.{_HERE[name]}"), name)
    raise AttributeError(f"module 'fpgaprune.quantize' has no attribute {name!r}")


__all__ = ["FixedType", "input_type", "to_qkeras", *_FROM_FRONT_END, *_HERE]
