"""Every layer's values in one pass of a quantized model (its front end's reference forward): its outputs, the
inputs of its activation quantizers, and the pre-activation values of the layers whose activation sits inside
them.

C-sim compares the hardware's traced layers with these, and the profile reads the same values: one pass
over the data serves both.
"""

from dataclasses import dataclass

import numpy as np


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
