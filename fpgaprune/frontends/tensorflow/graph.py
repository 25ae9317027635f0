"""A Keras model's graph from its config: each layer's inbound layers and the outputs (`FrontEnd.graph_edges`),
and editing a config (`drop_from_config`) for the rebuilds the Keras front ends make."""

from fpgaprune.frontends.layer_graph import SharedLayerError


def input_name(model) -> str:
    """The name hls4ml gives the model's input node (a Sequential model without an InputLayer: `<first>_input`)."""
    config = model.get_config()
    if "input_layers" in config:
        return config["input_layers"][0][0]
    first = config["layers"][0]
    return first["config"]["name"] if first["class_name"] == "InputLayer" else model.layers[0].name + "_input"


def graph_edges(model) -> tuple[list, dict, set]:
    """(the layers in the model's order, {layer: its inbound layer names}, the output layers' names)."""
    inbound = {layer.name: [] for layer in model.layers}
    if type(model).__name__ == "Sequential":
        names = [layer.name for layer in model.layers]
        for before, after in zip(names, names[1:]):
            inbound[after] = [before]
        return list(model.layers), inbound, {names[-1]}
    config = model.get_config()
    for entry in config["layers"]:
        nodes = entry.get("inbound_nodes") or []
        if len(nodes) > 1:
            raise SharedLayerError(
                f"layer '{entry['name']}' is shared (called {len(nodes)} times); fpgaprune needs each layer called once"
            )
        inbound[entry["name"]] = inbound_names(nodes[0]) if nodes else []
    outputs = config["output_layers"]
    if outputs and isinstance(outputs[0], str):  # Keras 3, one output: [name, node, tensor], not a list of them
        outputs = [outputs]
    return list(model.layers), inbound, {item[0] for item in outputs}


def inbound_names(node) -> list:
    """The layers that one call of a functional layer reads, in its config: tf_keras' `[[layer, node, tensor,
    kwargs], ...]`, or Keras 3's `{"args": ..., "kwargs": ...}` (each tensor argument's `keras_history`)."""
    if not isinstance(node, dict):
        return [item[0] for item in node]
    return [history[0] for history in keras_histories(node.get("args", ()))]


def keras_histories(value) -> list:
    """The `keras_history` ([layer, node, tensor]) of every Keras 3 tensor in a call's arguments, in order."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        return [list(value["config"]["keras_history"])]
    if isinstance(value, (list, tuple)):
        return [history for item in value for history in keras_histories(item)]
    return []


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
