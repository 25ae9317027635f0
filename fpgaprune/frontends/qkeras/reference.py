"""The reference forward of a tf_keras/QKeras model for C-sim's layer diff and the numerical profile: every
layer's values in one predict pass (`quantize.layer_values.LayerValues`): its outputs, the inputs of its
activation quantizers, and the pre-activation values of the layers whose activation sits inside them."""

from contextlib import nullcontext

import numpy as np

from fpgaprune.frontends.layer_reading import has_inner_activation
from fpgaprune.frontends.qkeras import quantizers as front
from fpgaprune.quantize.layer_values import LayerValues


class LayerValuesProbe:
    """`probe(x)`: the LayerValues of a model for inputs `x`, from one predict pass plus one call per layer
    whose activation is swapped for its linear output."""

    def __init__(self, model, batch_size: int = 512, keras=None, within=nullcontext):
        keras = keras or _keras2()
        self.model, self.batch_size, self.within = model, batch_size, within
        self.layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
        self.swapped = [layer for layer in self.layers if has_inner_activation(layer)]
        self.quantizing = [layer for layer in self.layers if front.activation_quantizer(layer) is not None]
        wanted = [model.outputs[0]] + [layer.output for layer in self.layers]
        wanted += [layer.input for layer in self.swapped + self.quantizing]
        self.probe, self.linear = keras.Model(model.inputs, wanted), keras.activations.linear

    def __call__(self, x) -> LayerValues:
        with self.within():
            values = self.probe.predict(x, batch_size=self.batch_size, verbose=0)
            n = len(self.layers)
            outputs = {layer.name: np.asarray(v) for layer, v in zip(self.layers, values[1 : 1 + n])}
            inputs = [np.asarray(v) for v in values[1 + n :]]
            pre = {layer.name: _linear_output(layer, x_in, self.linear) for layer, x_in in zip(self.swapped, inputs)}
        quantizer_inputs = dict(zip((layer.name for layer in self.quantizing), inputs[len(self.swapped) :]))
        return LayerValues(np.asarray(values[0]), outputs, pre, quantizer_inputs)


def _linear_output(layer, inputs: np.ndarray, linear) -> np.ndarray:
    """The layer's output before its own activation."""
    activation = layer.activation
    layer.activation = linear
    try:
        return np.asarray(layer(inputs))
    finally:
        layer.activation = activation


def _keras2():
    from fpgaprune.frontends.qkeras.keras2 import keras

    return keras


def exact_probe(model, batch_size: int = 512) -> LayerValuesProbe:
    """The probe of `model` computed exactly: its float64 copy (`exact.py`), run in float64."""
    from fpgaprune.frontends.qkeras.exact import exact_copy, float64

    return LayerValuesProbe(exact_copy(model), batch_size, _keras2(), within=float64)
