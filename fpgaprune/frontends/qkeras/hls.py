"""The one place that routes tf_keras and QKeras models to hls4ml's Keras-2 converter.

hls4ml 1.3 picks its Keras parser from `keras.__version__` of the installed `keras` package (3.x), not from
the model, and sends tf_keras models to the Keras-3 parser, which fails on them. hls4ml's own Keras-2 path
(`keras_v2_to_hls`, `parse_keras_model`) handles them. So its entry points run here with `import keras`
resolving to tf_keras, after hls4ml itself is fully imported; nothing outside these calls sees the switch.
"""

import copy
import importlib
import sys
from contextlib import contextmanager

import tf_keras

from fpgaprune.errors import ExportError, FpgapruneError, ModelTypeError
from fpgaprune.framework import front_end_of
from fpgaprune.frontends.qkeras.files import model_objects
from fpgaprune.frontends.qkeras.keras2 import keras, require_tf_keras_model
from fpgaprune.frontends.tensorflow.graph import drop_from_config
from fpgaprune.hls.names import cpp_names
from fpgaprune.model.layer_kinds import IDENTITY_AT_INFERENCE


@contextmanager
def _keras2_for_hls4ml():
    import hls4ml  # noqa: F401  (import everything first, so no module binds tf_keras for good)
    import hls4ml.converters  # noqa: F401
    import hls4ml.utils.config  # noqa: F401

    saved = sys.modules.get("keras")
    sys.modules["keras"] = tf_keras
    try:
        yield
    finally:
        if saved is None:
            sys.modules.pop("keras", None)
        else:
            sys.modules["keras"] = saved


def inference_model(model):
    """`model` without the layers that act only in training (IDENTITY_AT_INFERENCE: GaussianNoise,
    SpatialDropout2D, ...), which hls4ml 1.3 cannot parse but for Dropout; `model` itself when it has none.
    Its outputs are the same at inference; weights are copied by layer name."""
    dropped = [layer.name for layer in model.layers if type(layer).__name__ in IDENTITY_AT_INFERENCE]
    if not dropped:
        return model
    config = copy.deepcopy(model.get_config())
    for name in dropped:
        drop_from_config(config, name)
    kind = tf_keras.Sequential if isinstance(model, tf_keras.Sequential) else tf_keras.Model
    twin = kind.from_config(config, custom_objects=model_objects())
    for layer in twin.layers:
        layer.set_weights(model.get_layer(layer.name).get_weights())
    return twin


def layer_problem(model) -> str | None:
    """Why hls4ml's Keras-2 converter cannot take the model's layers, or None: every class it does not parse
    (training-only layers are left out for it: `inference_model`), and every pair of names that would become
    the same C++ identifier (the export writes names that are no identifiers as identifiers: `names.py`)."""
    import hls4ml
    from hls4ml.converters.keras_v2_to_hls import get_supported_keras_layers

    supported = {*get_supported_keras_layers(), *IDENTITY_AT_INFERENCE}
    layers = [
        (layer.get("config", {}).get("name") or layer.get("name"), layer.get("class_name"))
        for layer in model.get_config().get("layers", [])
    ]
    refused = [f"'{name}' is a {kind}" for name, kind in layers if kind not in supported]
    if refused:
        which = "layer " + refused[0] if len(refused) == 1 else "layers " + ", ".join(refused)
        fused = (
            " (QDepthwiseConv2DBatchnorm: a QDepthwiseConv2D and a BatchNormalization)"
            if any(kind == "QDepthwiseConv2DBatchnorm" for _, kind in layers)
            else ""
        )
        return (
            f"{which}, which hls4ml {hls4ml.__version__} cannot convert; replace "
            f"{'it' if len(refused) == 1 else 'them'}{fused}"
        )
    fused = _fused_problem(model)
    if fused:
        return fused
    try:
        cpp_names([layer.name for layer in model.layers], model.name)
    except ModelTypeError as error:
        return str(error).split(": ", 1)[1]
    return None


def _fused_problem(model) -> str | None:
    """What hls4ml 1.3 gets wrong in a QConv2DBatchnorm (its Conv2DBatchnorm node): with use_bias=False it types
    the folded bias as the absent one's 1-bit type and loses the batch normalization's shift; without a kernel
    quantizer it fails (hls4ml issue #928)."""
    import hls4ml

    for layer in model.get_config().get("layers", []):
        config = layer.get("config", {})
        if layer.get("class_name") != "QConv2DBatchnorm":
            continue
        if not config.get("use_bias", True):
            return (
                f"layer '{config.get('name')}' (QConv2DBatchnorm) has use_bias=False, and hls4ml "
                f"{hls4ml.__version__} then loses its folded bias (the batch normalization's shift); build it "
                "with use_bias=True"
            )
        if config.get("kernel_quantizer") is None:
            return (
                f"layer '{config.get('name')}' (QConv2DBatchnorm) has no kernel_quantizer, which hls4ml "
                f"{hls4ml.__version__} cannot convert; give it one (quantized_bits(bits,integer,alpha=1))"
            )
    return None


@contextmanager
def _naming_the_layer_at_work(current: dict):
    """hls4ml's Keras-2 layer handlers, each wrapped to note the layer it is handling (its errors name none)."""
    import hls4ml.converters  # noqa: F401  (registers the handlers)

    # importlib, because the package's function `keras_v2_to_hls` shadows its module of that name
    handlers = importlib.import_module("hls4ml.converters.keras_v2_to_hls").layer_handlers
    saved = dict(handlers)

    def noting(handler):
        def handle(keras_layer, *args, **kwargs):
            current["name"] = keras_layer.get("config", {}).get("name") or keras_layer.get("name")
            return handler(keras_layer, *args, **kwargs)

        return handle

    handlers.update({kind: noting(handler) for kind, handler in saved.items()})
    try:
        yield
    finally:
        handlers.clear()
        handlers.update(saved)


def conversion_problem(model) -> str | None:
    """`layer_problem`, then hls4ml's own layer handlers run on `model` (no project is written): the first
    error they raise, naming its layer, or None. Catches what only the handlers know, such as a
    LayerNormalization on a 4-D input, before any training."""
    import hls4ml

    problem = layer_problem(model)
    if problem:
        return problem
    try:
        model = front_end_of(model).exported_model(model)  # a Keras 3 model: its tf_keras twin
    except ModelTypeError as error:
        return str(error)
    try:
        with _one_line_conversion_errors():
            hls4ml.utils.config_from_keras_model(inference_model(model), granularity="name")
    except ExportError as error:
        return str(error)
    return None


@contextmanager
def _one_line_conversion_errors():
    """hls4ml's Keras-2 converter, whose handlers raise bare Exceptions (an AssertionError for a QGRU with a hard
    activation): one ExportError line naming the layer at work."""
    import hls4ml

    current = {}
    try:
        with _naming_the_layer_at_work(current), _keras2_for_hls4ml():
            yield
    except FpgapruneError:
        raise
    except Exception as error:  # noqa: BLE001 - hls4ml's handlers raise bare Exceptions
        where = f"layer {current['name']!r}: " if "name" in current else ""
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        text = f"{where}hls4ml {hls4ml.__version__} cannot convert {'it' if where else 'the model'}: {message}"
        raise ExportError(text) from None


def require_convertible_layers(model) -> None:
    """Raise a one-line ModelTypeError if hls4ml cannot take one of the model's layers (`layer_problem`)."""
    problem = layer_problem(model)
    if problem:
        raise ModelTypeError(f"model '{model.name}': {problem}")


def _exported(model):
    """The tf_keras/QKeras model hls4ml's Keras-2 converter takes for `model`, its layers checked."""

    model = front_end_of(model).exported_model(model)
    require_tf_keras_model(model)
    require_convertible_layers(model)
    return model


def config_from_model(model, granularity: str = "name", **kwargs) -> dict:
    """hls4ml's `config_from_keras_model` for a tf_keras/QKeras model (a Keras 3 model: its tf_keras twin)."""
    import hls4ml

    from fpgaprune.frontends.qkeras.hls_passes import register_convert_passes

    model = _exported(model)
    register_convert_passes()
    with _one_line_conversion_errors():
        return hls4ml.utils.config_from_keras_model(inference_model(model), granularity=granularity, **kwargs)


def convert_model(model, hls_config: dict, output_dir, **kwargs):
    """hls4ml's `convert_from_keras_model` for a tf_keras/QKeras model (a Keras 3 model: its tf_keras twin); an
    unbuilt hls4ml ModelGraph."""
    import hls4ml

    model = _exported(model)
    with _keras2_for_hls4ml():
        return hls4ml.converters.convert_from_keras_model(
            inference_model(model), hls_config=hls_config, output_dir=str(output_dir), **kwargs
        )


def renamed(model, names: dict):
    """A copy of `model` whose layers named in `names` ({original: new}) carry their new names; weights copied."""
    if not names:
        return model
    config = _renamed_config(copy.deepcopy(model.get_config()), names)
    kind = keras.Sequential if isinstance(model, keras.Sequential) else keras.Model
    twin = kind.from_config(config, custom_objects=model_objects())
    inverse = {new: old for old, new in names.items()}
    for layer in twin.layers:
        layer.set_weights(model.get_layer(inverse.get(layer.name, layer.name)).get_weights())
    return twin


def _renamed_config(config: dict, names: dict) -> dict:
    for entry in config["layers"]:
        if entry["config"].get("name") in names:
            entry["config"]["name"] = names[entry["config"]["name"]]
        if "name" in entry:
            entry["name"] = names.get(entry["name"], entry["name"])
        for node in entry.get("inbound_nodes") or []:
            for item in node:
                item[0] = names.get(item[0], item[0])
    for key in ("input_layers", "output_layers"):
        for item in config.get(key, []):
            item[0] = names.get(item[0], item[0])
    return config
