"""A model as fpgaprune reads it: its layers, their graph, and its weights in fpgaprune's layout."""

import hashlib
from abc import ABC

import numpy as np


class GraphAndWeights(ABC):
    """A model as fpgaprune reads it."""

    strips: bool = True  # `fpgaprune.strip` rebuilds its models without their dead channels
    indexes_own_layout: bool = False  # whether a selection's index addresses a layout other than fpgaprune's

    def layers(self, model) -> list:
        """The model's layers in order, each with a `name` and its weights as the attributes its kind names (a
        framework whose layers lack these presents views of them)."""
        return list(model.layers)

    def weight_named(self, layer, name: str) -> str:
        """fpgaprune's name of the layer's weight the framework calls `name` (a selection may use either)."""
        return name

    def strip(self, model, on_unsafe: str = "raise"):
        """`model` without its dead channels (`strip.StripResult`). Abstract: a front end whose `strips` is true gives
        it (the Keras ones: `frontends/tensorflow/strip.py`); `fpgaprune.strip` asks no other."""
        raise NotImplementedError(f"{self.name} does not strip")

    def named_arrays(self, model) -> dict:
        """{(layer name, weight name): its values}, every weight of every layer, as numpy arrays."""
        return {
            (layer.name, str(getattr(weight, "name", index)).split("/")[-1]): np.asarray(self.array(weight))
            for layer in self.layers(model)
            for index, weight in enumerate(layer.weights)
        }

    def state_token(self, model) -> bytes:
        """A fingerprint of every weight of every layer: a binding describes the model again when it changes
        (`record/binding.py`)."""
        return fingerprint(self.array(weight) for layer in self.layers(model) for weight in layer.weights)


def fingerprint(arrays) -> bytes:
    """A hash of the arrays' types, shapes and bytes, in order."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.digest()
