"""`to_qkeras`: the quantized twin of a model, made by its front end (`FrontEnd.quantized_twin`)."""

from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS
from fpgaprune.record import resolved


def to_qkeras(model, spec=None, batchnorm: str = "fold"):
    """The quantized twin of `model` that QAT trains and hls4ml exports: same layer names, holds carried over
    (BatchNormalization folded unless batchnorm="quantize"). A tf_keras model becomes its QKeras model; a Keras 3
    model its tf_keras twin's (`frontends/keras3/twin.py`). `spec`: {"default": {role: quantizer text}, "layers":
    ...}; None: the built-in default (`DEFAULT_QUANTIZERS`) for float layers, a quantized layer's own kept."""
    spec = {"default": dict(DEFAULT_QUANTIZERS)} if spec is None else spec
    return resolved(model).twin(spec, batchnorm).model
