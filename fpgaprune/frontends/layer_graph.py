"""A model's layers as a graph: inbound and outbound layer names, and a topological order.

The front ends' own: strip (where channels flow), the QKeras conversion (BatchNormalization folding) and
`describe` read framework models through it; every stage after reads the record's graph.
"""

from graphlib import TopologicalSorter

from fpgaprune.errors import FpgapruneError
from fpgaprune.framework import front_end_of
from fpgaprune.model.layer_kinds import role_of


def output_shape(layer_or_model) -> tuple:
    """The output shape, batch first (tf_keras' `output_shape`; Keras 3 layers have only `output.shape`; a model
    that carries neither, such as a PyTorch module: its front end's answer)."""
    try:
        return tuple(layer_or_model.output_shape)
    except AttributeError:
        pass
    try:
        return tuple(layer_or_model.output.shape)
    except AttributeError:
        return tuple(front_end_of(layer_or_model).output_shape(layer_or_model))


def input_shape(layer) -> tuple:
    """The input shape, batch first (tf_keras' `input_shape`; Keras 3 layers have only `input.shape`)."""
    try:
        return tuple(layer.input_shape)
    except AttributeError:
        return tuple(layer.input.shape)


class SharedLayerError(FpgapruneError):
    """A layer is called more than once; its inputs are not one list of layers."""


class LayerGraph:
    """Layers by name with their inbound and outbound layer names (Sequential or functional, no shared layers), as
    the model's front end `front` reads them (`FrontEnd.graph_edges`)."""

    def __init__(self, model, front):
        self.model = model
        layers, self.inbound, self.outputs = front.graph_edges(model)
        self.layers = {layer.name: layer for layer in layers}
        self.outbound = {name: [] for name in self.layers}
        for name, sources in self.inbound.items():
            for source in sources:
                self.outbound[source].append(name)

    def class_of(self, name: str) -> str:
        """The layer's role (`layer_kinds.role_of`: its Keras class name through its MRO), else its class name."""
        return role_of(self.layers[name])

    def topological(self) -> list[str]:
        """Every layer after the layers it reads (ties in the model's own order)."""
        return list(TopologicalSorter({name: self.inbound[name] for name in self.layers}).static_order())
