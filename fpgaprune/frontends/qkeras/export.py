"""The model hls4ml's Keras-2 converter takes for a QKeras model.

hls4ml 1.3 reads a QBatchNormalization's float gamma, beta, mean and variance and ignores their quantizers
(QKeras' defaults are powers of 2), so its scale and bias would differ from QKeras'. The model handed to it
carries the quantized values instead, as plain parameters: hls4ml then computes the batch normalization QKeras
computes, and what is left between them is float32's rounding, which C-sim's tolerance bounds
(`hls/tolerance.py`).
"""

import copy

import numpy as np

from fpgaprune.frontends.qkeras import quantizers as front
from fpgaprune.frontends.qkeras.files import model_objects

_PARAMETERS = ("gamma", "beta", "mean", "variance")


def _quantizing_batchnorms(model) -> list:
    return [
        layer
        for layer in model.layers
        if type(layer).__name__ == front.BATCHNORM
        and any(front.weight_quantizer(layer, name) is not None for name in _PARAMETERS)
    ]


def exported_model(model):
    """`model`, or a copy whose QBatchNormalization layers hold their quantized parameters (quantizers None)."""
    from fpgaprune.frontends.qkeras.keras2 import keras

    batchnorms = {layer.name for layer in _quantizing_batchnorms(model)}
    if not batchnorms:
        return model
    config = copy.deepcopy(model.get_config())
    for entry in config["layers"]:
        if entry["config"].get("name") in batchnorms:
            entry["config"].update({f"{name}_quantizer": None for name in _PARAMETERS})
    cls = keras.Sequential if isinstance(model, keras.Sequential) else keras.Model
    copied = cls.from_config(config, custom_objects=model_objects())
    for layer in copied.layers:
        source = model.get_layer(layer.name)
        layer.set_weights(_quantized_parameters(source) if layer.name in batchnorms else source.get_weights())
    return copied


def _quantized_parameters(layer) -> list:
    """A QBatchNormalization's weights as QKeras uses them: each through its quantizer."""
    values = []
    for weight in layer.weights:
        name = weight.name.split("/")[-1].split(":")[0].replace("moving_", "")
        quantizer = front.weight_quantizer(layer, name)
        values.append(np.asarray(quantizer(weight) if quantizer is not None else weight, np.float32))
    return values
