"""A model as fpgaprune reads it: its weights as arrays in fpgaprune's layout, a fingerprint of them, and strip."""

import hashlib
from abc import ABC

import numpy as np


class GraphAndWeights(ABC):
    """A model as fpgaprune reads it."""

    indexes_own_layout: bool = False  # whether a selection's index addresses a layout other than fpgaprune's

    def strip(self, model, on_unsafe: str = "raise"):
        """`model` without its dead channels (`strip.StripResult`: the Keras front ends',
        `frontends/tensorflow/strip.py`); one StripError line where its models are not rebuilt (a PyTorch module
        keeps its dead channels)."""
        from fpgaprune.strip.result import STRIP_KERAS_ONLY, StripError

        raise StripError(f"{type(model).__name__}: {STRIP_KERAS_ONLY}")

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
