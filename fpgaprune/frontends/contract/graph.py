"""A model as fpgaprune reads it: its layers, their graph, and its weights in fpgaprune's layout."""

import hashlib
from abc import ABC, abstractmethod

import numpy as np


class GraphAndWeights(ABC):
    """A model as fpgaprune reads it."""

    strips: bool = True  # `fpgaprune.strip` rebuilds its models without their dead channels
    indexes_own_layout: bool = False  # whether a selection's index addresses a layout other than fpgaprune's

    def layers(self, model) -> list:
        """The model's layers in order, each with a `name` and its weights as the attributes its kind names (a
        framework whose layers lack these presents views of them)."""
        return list(model.layers)

    def get_layer(self, model, name: str):
        return next(layer for layer in self.layers(model) if layer.name == name)

    def index_shape(self, layer, weight) -> tuple:
        """The shape a selection's index addresses: the weight in the framework's own layout."""
        return tuple(weight.variable(layer).shape)

    def weight_named(self, layer, name: str) -> str:
        """fpgaprune's name of the layer's weight the framework calls `name` (a selection may use either)."""
        return name

    def index_layout(self, layer) -> tuple | None:
        """How the user's layout of the layer's kernel maps to fpgaprune's, axis by axis; None: the same."""
        return None

    def to_fpgaprune_layout(self, layer, weight, mask):
        """A boolean mask in the framework's layout (`index_shape`) in fpgaprune's (a kernel's outputs last)."""
        return mask

    def strip(self, model, on_unsafe: str = "raise"):
        """`model` without its dead channels (`strip.StripResult`), where `strips`."""
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

    @abstractmethod
    def graph_edges(self, model) -> tuple:
        """The model as a graph of layers: (its layers in order, each with a `name` and its weights as the
        attributes its kind names; {layer name: the names of the layers it reads}; the output layers' names)."""

    @abstractmethod
    def array(self, variable):
        """A weight as a numpy array, in fpgaprune's layout (a kernel's input axes first, its outputs last)."""


def fingerprint(arrays) -> bytes:
    """A hash of the arrays' types, shapes and bytes, in order."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.digest()
