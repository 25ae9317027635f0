"""A model's layers as a graph: inbound and outbound layer names, and a topological order.

Strip (where channels flow), the QKeras conversion (BatchNormalization folding) and the hls4ml precision walk
all read models through it.
"""

from graphlib import TopologicalSorter

from fpgaprune.errors import FpgapruneError

MERGES = ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate")
# Layers whose output at inference is their input. The first act element by element in training, so channels
# pass through them; the random image transforms move pixels (those that change the shape are left out).
IDENTITY_ELEMENTWISE = (
    "Identity",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "AlphaDropout",
    "GaussianDropout",
    "GaussianNoise",
    "ActivityRegularization",
)
IDENTITY_AT_INFERENCE = (
    *IDENTITY_ELEMENTWISE,
    "RandomFlip",
    "RandomTranslation",
    "RandomRotation",
    "RandomZoom",
    "RandomContrast",
    "RandomBrightness",
)


def output_shape(layer_or_model) -> tuple:
    """The output shape, batch first (tf_keras' `output_shape`; Keras 3 layers have only `output.shape`)."""
    try:
        return tuple(layer_or_model.output_shape)
    except AttributeError:
        return tuple(layer_or_model.output.shape)


def input_shape(layer) -> tuple:
    """The input shape, batch first (tf_keras' `input_shape`; Keras 3 layers have only `input.shape`)."""
    try:
        return tuple(layer.input_shape)
    except AttributeError:
        return tuple(layer.input.shape)


class SharedLayerError(FpgapruneError):
    """A layer is called more than once; its inputs are not one list of layers."""


class LayerGraph:
    """Layers by name with their inbound and outbound layer names (Sequential or functional, no shared layers)."""

    def __init__(self, model):
        self.model = model
        self.layers = {layer.name: layer for layer in model.layers}
        self.inbound = {name: [] for name in self.layers}
        config = model.get_config()
        if type(model).__name__ == "Sequential":
            names = [layer.name for layer in model.layers]
            for before, after in zip(names, names[1:]):
                self.inbound[after] = [before]
            self.outputs = {names[-1]}
        else:
            for entry in config["layers"]:
                nodes = entry.get("inbound_nodes") or []
                if len(nodes) > 1:
                    raise SharedLayerError(
                        f"layer '{entry['name']}' is shared (called {len(nodes)} times); "
                        "fpgaprune needs each layer called once"
                    )
                self.inbound[entry["name"]] = [item[0] for item in nodes[0]] if nodes else []
            self.outputs = {item[0] for item in config["output_layers"]}
        self.outbound = {name: [] for name in self.layers}
        for name, sources in self.inbound.items():
            for source in sources:
                self.outbound[source].append(name)

    def class_of(self, name: str) -> str:
        return type(self.layers[name]).__name__

    def topological(self) -> list[str]:
        """Every layer after the layers it reads (ties in the model's own order)."""
        return list(TopologicalSorter({name: self.inbound[name] for name in self.layers}).static_order())


def drop_from_config(config: dict, name: str) -> None:
    """Remove the one-input layer `name` from a model config (Sequential or functional), in place: the layers
    and outputs that read it read its input instead."""
    entries = config["layers"]
    index = next(i for i, entry in enumerate(entries) if entry["config"]["name"] == name)
    removed = entries.pop(index)
    nodes = removed.get("inbound_nodes") or []
    if nodes:  # functional: [layer, node index, tensor index, kwargs] items
        source = list(nodes[0][0][:3])
        readers = [item for entry in entries for node in entry.get("inbound_nodes") or [] for item in node]
        for item in readers + list(config.get("output_layers", [])):
            if item[0] == name:
                item[:3] = source
    elif "batch_input_shape" in removed["config"] and index < len(entries):  # a Sequential without InputLayer
        entries[index]["config"].setdefault("batch_input_shape", removed["config"]["batch_input_shape"])
