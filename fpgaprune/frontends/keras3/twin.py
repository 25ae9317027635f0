"""The tf_keras twin of a Keras 3 model: same layers, names and config, weights copied exactly.

QKeras (QAT) and hls4ml's Keras-2 converter take tf_keras models, so a Keras 3 model is quantized and exported
as its twin. The twin is built from the model's config, translated to tf_keras' format:
- objects lose Keras 3's `module`/`registered_name` keys, and dtype policies become their names;
- `InputLayer` takes `batch_input_shape` for `batch_shape`;
- functional `inbound_nodes` become tf_keras' `[layer, node, tensor, kwargs]` items (from `args`/`kwargs`);
- a config key that tf_keras' class does not take is dropped when it holds Keras 3's neutral default (an
  initializer's `input_axes: null`, Dense's `quantization_config: null`), and is one line otherwise: the twin
  would compute something else.
Holds are not translated: the caller finalizes the model first and holds the twin with its manifest.
"""

import inspect

import numpy as np

from fpgaprune.errors import ModelTypeError
from fpgaprune.frontends.tensorflow.graph import keras_histories

_NEUTRAL = (None, False, 0, 0.0, "", (), [], {})
_LAYER_KEYS = {"name", "trainable", "dtype", "input_shape", "batch_input_shape", "batch_size", "input_dim"}
_MODELS = ("Functional", "Sequential", "Model")


def tf_keras_twin(model):
    """A plain tf_keras model with `model`'s layers, names and weights (`model` must carry no holds)."""
    import tf_keras

    config = _model_config(model.get_config(), type(model).__name__, model.name)
    try:
        cls = tf_keras.Sequential if type(model).__name__ == "Sequential" else tf_keras.Model
        twin = cls.from_config(config)
    except ModelTypeError:
        raise
    except Exception as error:  # noqa: BLE001 - tf_keras reports a config it cannot build in many ways
        raise ModelTypeError(
            f"model '{model.name}': its tf_keras twin (for QKeras and hls4ml) cannot be built "
            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        ) from None
    _copy_weights(model, twin)
    return twin


def _copy_weights(source, twin) -> None:
    for layer in twin.layers:
        values = source.get_layer(layer.name).get_weights()
        if [np.shape(v) for v in values] != [tuple(w.shape) for w in layer.weights]:
            raise ModelTypeError(
                f"layer '{layer.name}': its weights are {[np.shape(v) for v in values]} in Keras 3 "
                f"and {[tuple(w.shape) for w in layer.weights]} in its tf_keras twin"
            )
        layer.set_weights(values)


def _model_config(config: dict, class_name: str, name: str) -> dict:
    layers = [_layer_entry(entry, class_name == "Sequential") for entry in config["layers"]]
    out = {"name": config.get("name", name), "layers": layers}
    if class_name != "Sequential":
        out["input_layers"] = _tensor_list(config["input_layers"])
        out["output_layers"] = _tensor_list(config["output_layers"])
    return out


def _tensor_list(items) -> list:
    """[[layer, node, tensor], ...]: Keras 3 writes one input or output as a flat triple."""
    return [list(items)] if items and isinstance(items[0], str) else [list(item) for item in items]


def _layer_entry(entry: dict, sequential: bool) -> dict:
    class_name, config = entry["class_name"], entry["config"]
    name = config.get("name", entry.get("name"))
    if class_name in _MODELS:
        translated = _model_config(config, class_name, name)
    else:
        translated = _layer_config(class_name, config, name)
    out = {"class_name": class_name, "config": translated}
    if not sequential:
        out["name"] = name
        out["inbound_nodes"] = [_node(node, name) for node in entry.get("inbound_nodes", [])]
    return out


def _layer_config(class_name: str, config: dict, name: str) -> dict:
    import tf_keras

    cls = getattr(tf_keras.layers, class_name, None)
    if not isinstance(cls, type):
        raise ModelTypeError(
            f"layer '{name}' is a Keras 3 {class_name}, which tf_keras has no class for; QKeras "
            "and hls4ml's Keras-2 converter need its twin (use layers that both Keras have)"
        )
    config = dict(config)
    if class_name == "InputLayer":
        config["batch_input_shape"] = config.pop("batch_shape", None)
        if config.pop("optional", False):
            raise ModelTypeError(f"layer '{name}': an optional input has no tf_keras twin")
    return _kept(config, _accepted(cls) | _LAYER_KEYS, f"layer '{name}' ({class_name})", name)


def _accepted(cls) -> set:
    """The constructor arguments of `cls` and its bases (an RNN's `return_sequences` is its base's)."""
    keys = set()
    for base in cls.__mro__:
        if "__init__" in vars(base):
            keys |= {
                p.name
                for p in inspect.signature(base.__init__).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
    return keys - {"self"}


def _kept(config: dict, accepted: set, where: str, layer: str) -> dict:
    out = {}
    for key, value in config.items():
        if key not in accepted:
            if value in _NEUTRAL or value is None:
                continue
            raise ModelTypeError(
                f"{where}: Keras 3 option {key}={value!r} has no tf_keras twin; QKeras and "
                "hls4ml's Keras-2 converter would compute without it (leave it at its default)"
            )
        out[key] = _value(value, layer)
    return out


def _value(value, layer: str):
    """A config value in tf_keras' format: nested objects translated, dtype policies by name."""
    if isinstance(value, list):
        return [_value(item, layer) for item in value]
    if not (isinstance(value, dict) and "class_name" in value):
        return value
    class_name, config = value["class_name"], value.get("config")
    if class_name in ("DTypePolicy", "FloatDTypePolicy"):
        return config["name"]
    if value.get("registered_name") == "fpgaprune>HoldConstraint":
        raise ModelTypeError(f"layer '{layer}' carries holds; finalize the model before building its twin")
    if class_name == "__tuple__":
        return tuple(_value(item, layer) for item in config["value"])
    target = _tf_keras_object(value.get("module", ""), class_name, layer)
    if not isinstance(config, dict):
        return {"class_name": class_name, "config": config}
    return {
        "class_name": class_name,
        "config": _kept(config, _accepted(target), f"layer '{layer}': {class_name}", layer),
    }


def _tf_keras_object(module: str, class_name: str, layer: str):
    import tf_keras

    family = module.split(".")[-1] if module else ""
    source = getattr(tf_keras, family, None) if family in ("initializers", "regularizers", "constraints") else None
    target = getattr(source, class_name, None) if source is not None else None
    if not isinstance(target, type):
        raise ModelTypeError(
            f"layer '{layer}': its {class_name} ({module or 'no module'}) has no tf_keras twin; "
            "use Keras' own initializers, regularizers and constraints"
        )
    return target


def _node(node, layer: str) -> list:
    """One call of a functional layer in tf_keras' format: [[inbound layer, node, tensor, kwargs], ...]."""
    if not isinstance(node, dict):  # already tf_keras' format
        return node
    history = keras_histories(node.get("args", []))
    kwargs = {key: value for key, value in (node.get("kwargs") or {}).items() if value is not None}
    if any(isinstance(value, dict) and value.get("class_name") == "__keras_tensor__" for value in kwargs.values()):
        raise ModelTypeError(f"layer '{layer}' takes a tensor as a keyword argument; tf_keras' twin cannot")
    return [[*item, kwargs] for item in history]
