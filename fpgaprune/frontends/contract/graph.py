"""A model as fpgaprune reads it: its layers, their graph, and its weights in fpgaprune's layout."""

from abc import ABC, abstractmethod


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

    @abstractmethod
    def graph_edges(self, model) -> tuple:
        """The model as a graph of layers: (its layers in order, each with a `name` and its weights as the
        attributes its kind names; {layer name: the names of the layers it reads}; the output layers' names)."""

    @abstractmethod
    def array(self, variable):
        """A weight as a numpy array, in fpgaprune's layout (a kernel's input axes first, its outputs last)."""
