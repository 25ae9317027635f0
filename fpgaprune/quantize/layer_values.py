"""Every layer's values in one predict pass of a (QKeras) model: its outputs, the inputs of its activation
quantizers, and the pre-activation values of the layers whose activation sits inside them.

C-sim compares the hardware's traced layers with these, and the profile reads the same values: one pass
over the data serves both.
"""

from dataclasses import dataclass

import numpy as np

from fpgaprune.frontends import QUANTIZING as front


def activation_name(layer) -> str:
    activation = getattr(layer, "activation", None)
    return str(
        getattr(activation, "__name__", None) or type(activation).__name__ if activation is not None else ""
    ).lower()


def has_inner_activation(layer) -> bool:
    """Whether the layer applies a non-linear activation inside it that can be swapped out for its linear
    output (a recurrent layer's activations are internal: its `activation` is a read-only property)."""
    if isinstance(getattr(type(layer), "activation", None), property) or getattr(layer, "kernel", None) is None:
        return False
    return activation_name(layer) not in ("", "linear", "none", "nonetype")


@dataclass
class LayerValues:
    """One chunk's values: the model's outputs, and per layer name its output, pre-activation or input."""

    outputs: np.ndarray
    layer_outputs: dict
    pre_activations: dict  # layers with an activation inside: their linear output
    layer_inputs: dict  # QActivation layers: what their quantizer receives

    def traced(self, name: str) -> np.ndarray:
        """What hls4ml traces for the layer: a layer with an activation inside before it (hls4ml splits the
        activation into a node of its own), any other layer its output."""
        return self.pre_activations.get(name, self.layer_outputs[name])


class LayerValuesProbe:
    """`probe(x)`: the LayerValues of a model for inputs `x`, from one predict pass plus one call per layer
    whose activation is swapped for its linear output."""

    def __init__(self, model, batch_size: int = 512):
        from fpgaprune.tfk import keras

        self.model, self.batch_size = model, batch_size
        self.layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
        self.swapped = [layer for layer in self.layers if has_inner_activation(layer)]
        self.quantizing = [layer for layer in self.layers if front.activation_quantizer(layer) is not None]
        wanted = [model.output] + [layer.output for layer in self.layers]
        wanted += [layer.input for layer in self.swapped + self.quantizing]
        self.probe = keras.Model(model.inputs, wanted)

    def __call__(self, x) -> LayerValues:
        values = self.probe.predict(x, batch_size=self.batch_size, verbose=0)
        n = len(self.layers)
        outputs = {layer.name: np.asarray(v) for layer, v in zip(self.layers, values[1 : 1 + n])}
        inputs = [np.asarray(v) for v in values[1 + n :]]
        pre = {layer.name: _linear_output(layer, x_in) for layer, x_in in zip(self.swapped, inputs)}
        quantizer_inputs = dict(zip((layer.name for layer in self.quantizing), inputs[len(self.swapped) :]))
        return LayerValues(np.asarray(values[0]), outputs, pre, quantizer_inputs)


def _linear_output(layer, inputs: np.ndarray) -> np.ndarray:
    """The layer's output before its own activation."""
    from fpgaprune.tfk import keras

    activation = layer.activation
    layer.activation = keras.activations.linear
    try:
        return np.asarray(layer(inputs))
    finally:
        layer.activation = activation
