"""The channel dependency graph: for each producer (Conv/Dense), the layers its output channels flow through.

A producer's channels pass through per-channel layers (BatchNormalization, activations, pooling, Dropout and
the other element-wise training-only layers, Flatten) until they reach consumers (Conv/Dense) that mix them. A
merge layer, a reshape, a model output or any other layer makes the region opaque: its channels cannot be
removed without rewiring more than we check.
"""

from dataclasses import dataclass, field

from fpgaprune.frontends.layer_graph import LayerGraph, SharedLayerError, input_shape
from fpgaprune.model.layer_kinds import CHANNELS_PASS as PASSTHROUGH
from fpgaprune.model.layer_kinds import MERGES, kind_of
from fpgaprune.strip.result import StripError


# Layers whose output channels strip can remove: the float kinds with a channel-count argument (layer_kinds).
def produces_channels(layer) -> str:
    """The config key that sizes the layer's output channels when its kind lets strip remove them ('' if not)."""
    kind = kind_of(layer)
    return kind.channels if kind is not None else ""


@dataclass
class Region:
    """Where one producer's channels go. `paths[consumer]` lists the pass-through layers on the way there."""

    producer: str
    paths: dict = field(default_factory=dict)
    passthrough: set = field(default_factory=set)
    opaque: str = ""  # why channels cannot be removed, or "" when they can
    merges: list = field(default_factory=list)


class ChannelGraph(LayerGraph):
    """The layer graph with where each producer's channels go (strip's view of a model)."""

    def __init__(self, model, front):
        try:
            super().__init__(model, front)
        except SharedLayerError as error:
            raise StripError(str(error)) from None

    def producers(self) -> list[str]:
        return [n for n in self.topological() if produces_channels(self.layers[n]) and _channels_last(self.layers[n])]

    def region(self, producer: str) -> Region:
        region = Region(producer)
        if producer in self.outputs:
            region.opaque = f"'{producer}' is a model output"
        for consumer in self.outbound[producer]:
            self._walk(consumer, [], region)
        return region

    def _walk(self, name: str, path: list, region: Region) -> None:
        kind = self.class_of(name)
        if kind in PASSTHROUGH:
            region.passthrough.add(name)
            if name in self.outputs or not self.outbound[name]:
                region.opaque = region.opaque or f"'{name}' is a model output"
            for consumer in self.outbound[name]:
                self._walk(consumer, path + [name], region)
        elif produces_channels(self.layers[name]) and self._accepts_channels(name, path):
            region.paths[name] = path
        elif kind in MERGES:
            region.merges.append(name)
            region.opaque = region.opaque or f"its channels reach {kind} layer '{name}'"
        else:
            region.opaque = region.opaque or f"its channels reach {kind} layer '{name}'"

    def _accepts_channels(self, name: str, path: list) -> bool:
        layer = self.layers[name]
        if not _channels_last(layer) or getattr(layer, "groups", 1) != 1:
            return False
        if produces_channels(layer) == "units":  # Dense
            return len(input_shape(layer)) == 2  # a vector: after Flatten, global pooling or another Dense
        return not any(self.class_of(step) == "Flatten" for step in path)


def _channels_last(layer) -> bool:
    return getattr(layer, "data_format", "channels_last") == "channels_last"
