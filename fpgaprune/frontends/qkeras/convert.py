"""to_qkeras(): the QKeras twin of a (pruned, optionally stripped) tf_keras model, holds carried over.

Conv1D/Conv2D/DepthwiseConv2D/SeparableConv2D/Dense/LSTM become their Q layers with the quantizers of a
QuantizationSpec. Activations (as layers or inside a non-recurrent layer) take the `activation` quantizer
that computes their function: quantized_relu for relu, quantized_tanh for tanh, quantized_sigmoid for sigmoid
(QKeras' hard tanh/sigmoid unless use_real_tanh/use_real_sigmoid is set). A default that computes another
function leaves the activation in float; a per-layer one is an error. BatchNormalization right after a linear
Conv/Dense is folded into its weights (batchnorm="fold"); with batchnorm="quantize" every BatchNormalization
becomes a QBatchNormalization instead, with float parameters (QKeras' default po2 parameter quantizers are
ignored by hls4ml 1.3, so C-sim would differ).

A QKeras model (or layer) that comes in quantized keeps its own quantizers: `quantization.layers.<name>`
replaces the roles it names, and the default quantizes only the float layers beside them
(`quantizer_sources` says which is which). A BatchNormalization after a layer quantized already is not folded
into it (that would change the quantized kernel); it becomes a QBatchNormalization with float parameters.
"""

import copy

import numpy as np

from fpgaprune.errors import QuantizationConfigError
from fpgaprune.frontends.layer_graph import LayerGraph
from fpgaprune.frontends.qkeras import quantizers as front
from fpgaprune.frontends.qkeras.keras2 import keras, qkeras_objects, require_tf_keras_model
from fpgaprune.frontends.qkeras.layers import FLOAT_CLASSES, QUANTIZED_CLASS
from fpgaprune.frontends.qkeras.spec import QuantizationSpec
from fpgaprune.frontends.tensorflow.front_end import TensorFlowKeras
from fpgaprune.frontends.tensorflow.graph import drop_from_config
from fpgaprune.masking import FREEZE, HoldEntry, MaskManifest, finalize, hold
from fpgaprune.model.layer_kinds import kind_of

# The float activation that each QKeras activation quantizer stands for.
_COMPUTES = {
    "quantized_relu": "relu",
    "quantized_relu_po2": "relu",
    "quantized_tanh": "tanh",
    "quantized_sigmoid": "sigmoid",
}


def to_qkeras(model, spec: QuantizationSpec | dict, batchnorm: str = "fold"):
    """A new QKeras model: same layer names (BatchNormalization folded away unless batchnorm="quantize")."""
    require_tf_keras_model(model)
    spec = spec if isinstance(spec, QuantizationSpec) else QuantizationSpec.from_dict(spec)
    if batchnorm not in ("fold", "quantize"):
        raise QuantizationConfigError(f"batchnorm must be 'fold' or 'quantize', got {batchnorm!r}")
    plain, manifest = finalize(model)
    spec.check_layers(layer.name for layer in plain.layers)
    config, weights = copy.deepcopy(plain.get_config()), {layer.name: layer.get_weights() for layer in plain.layers}
    if batchnorm == "fold":
        _fold_batchnorms(plain, config, weights)
    layers = {layer.name: layer for layer in plain.layers}
    for entry in config["layers"]:
        if entry["config"]["name"] in layers:  # not a Sequential's InputLayer
            _quantize_entry(entry, spec, layers[entry["config"]["name"]])
    objects = qkeras_objects()
    cls = keras.Sequential if isinstance(plain, keras.Sequential) else keras.Model
    quantized = cls.from_config(config, custom_objects=objects)
    for layer in quantized.layers:
        layer.set_weights(weights[layer.name])
    # Frozen values are re-read from the (possibly folded) weights; pruned entries stay 0.
    entries = [
        HoldEntry(e.layer, e.variable, e.mode, e.index, e.where, None if e.mode == FREEZE else e.value)
        for e in manifest
    ]
    return hold(quantized, MaskManifest(entries)) if entries else quantized


def _quantized_kind(layer):
    """The kind of a float layer that becomes a QKeras layer; a subclass that changes its kind's computation
    (its own `call`) is one line: its QKeras twin would drop the change."""
    kind = kind_of(layer)
    if (
        kind is None
        or front.weight_quantizer(layer, "kernel") is not None
        or type(layer).__module__.startswith("qkeras")
    ):
        return None
    base = FLOAT_CLASSES[kind.name]
    changed = [cls.__name__ for cls in type(layer).__mro__[: type(layer).__mro__.index(base)] if "call" in vars(cls)]
    if changed:
        raise QuantizationConfigError(
            f"layer '{layer.name}' is a {type(layer).__name__}, a subclass of {kind.name} "
            f"with its own call ({changed[0]}): its QKeras twin would drop that; quantize "
            f"a model of {kind.name} layers"
        )
    return kind


def _quantize_entry(entry: dict, spec: QuantizationSpec, layer) -> None:
    class_name, config = entry["class_name"], entry["config"]
    if type(layer).__module__.startswith("qkeras"):  # a QKeras layer keeps its quantizers but those named
        _replace_named(entry, spec, layer)
        return
    roles = spec.for_layer(config["name"])
    kind = _quantized_kind(layer)
    activation = _activation_quantizer(spec, config["name"], _function_of(layer, config), roles)
    if kind is not None:
        q_class = QUANTIZED_CLASS[kind.name]
        arguments = {f"{weight_role}_quantizer": role for weight_role, role in kind.quantizers}
        for argument, role in arguments.items():
            text = roles.get(role) or (roles.get("kernel") if role == "recurrent" else None)
            if text is None:
                raise QuantizationConfigError(
                    f"{spec.origin}: layer '{config['name']}' ({class_name}) needs a '{role}' quantizer "
                    "(set it under default or layers)"
                )
            config[argument] = text
        if activation:
            config["activation"] = activation
        _rename(entry, q_class)
    elif class_name == "BatchNormalization":  # left after folding, or batchnorm="quantize"
        config.update({f"{name}_quantizer": None for name in ("gamma", "beta", "mean", "variance")})
        _rename(entry, front.BATCHNORM)  # float parameters: hls4ml 1.3 ignores QBN's quantizers
    elif activation:
        entry["config"] = {
            "name": config["name"],
            "activation": activation,
            "trainable": config.get("trainable", True),
            "dtype": config.get("dtype", "float32"),
        }
        _rename(entry, front.ACTIVATION)


def _replace_named(entry: dict, spec: QuantizationSpec, layer) -> None:
    """Replace the quantizers of a QKeras layer that `quantization.layers.<name>` names, role by role."""
    config, named = entry["config"], spec.layers.get(layer.name, {})
    kind = kind_of(layer)
    arguments = {argument: role for argument, role in (kind.quantizers if kind else ())}
    for role, text in named.items():
        if role == "activation":
            if front.activation_quantizer(layer) is None and _function_of(layer, config) is None:
                raise QuantizationConfigError(
                    f"{spec.origin}.layers.{layer.name}.activation: layer '{layer.name}' "
                    f"({type(layer).__name__}) applies no activation that a quantizer can stand for"
                )
            problem = activation_mismatch(layer, text)
            if problem:
                raise QuantizationConfigError(f"{spec.origin}.layers.{layer.name}.activation: {problem}")
            config["activation"] = text
            continue
        replaced = [a for a, r in arguments.items() if r == role or (role == "kernel" and r == "recurrent")]
        if not replaced or any(f"{a}_quantizer" not in config for a in replaced):
            raise QuantizationConfigError(
                f"{spec.origin}.layers.{layer.name}.{role}: layer '{layer.name}' ({type(layer).__name__}) has no "
                f"{role} quantizer to replace"
            )
        config.update({f"{argument}_quantizer": text for argument in replaced})


def quantizer_sources(model, spec: QuantizationSpec | dict, default_given: bool = True) -> dict:
    """{layer: where its quantizers come from} for every layer of `model` (tf_keras, QKeras or Keras 3) that has
    or gets a quantizer: its own (kept), `quantization.layers` (for the roles named there), or the default
    (`default_given`: the config's, else the built-in one)."""
    spec = spec if isinstance(spec, QuantizationSpec) else QuantizationSpec.from_dict(spec)
    default = "quantization.default" if default_given else "the built-in default (quantization.default unset)"
    sources = {}
    for layer in model.layers:
        named = sorted(spec.layers.get(layer.name, {}))
        if type(layer).__module__.startswith("qkeras"):
            kept = "its own quantizers, kept"
            sources[layer.name] = f"{kept}; {', '.join(named)} from quantization.layers" if named else kept
        elif getattr(kind_of(layer), "quantizers", ()) or _activation_quantizer(
            spec, layer.name, _function_of(layer, layer.get_config()), spec.for_layer(layer.name)
        ):
            sources[layer.name] = f"quantization.layers ({', '.join(named)}), else {default}" if named else default
    return sources


def _rename(entry: dict, class_name: str) -> None:
    entry["class_name"] = class_name
    entry.pop("module", None)
    entry.pop("registered_name", None)


def _function_of(layer, config: dict) -> str | None:
    """The activation function a layer applies that a quantizer may replace (None: none, or not replaceable)."""
    class_name, kind = type(layer).__name__, kind_of(layer)
    if class_name == front.ACTIVATION:  # a QActivation: the function its quantizer computes
        return _COMPUTES.get(type(front.activation_quantizer(layer)).__name__)
    if class_name == "ReLU":
        plain = config.get("max_value") is None and not config.get("negative_slope") and not config.get("threshold")
        return "relu" if plain else None
    if class_name == "Activation" or (kind is not None and kind.precision != "recurrent"):
        function = config.get("activation")
        if isinstance(function, dict):  # a QKeras layer's quantizer, serialized
            function = function.get("class_name")
        if isinstance(function, str):  # "relu", or a quantizer that stands for it: "quantized_relu(6,2)"
            function = _COMPUTES.get(function.split("(")[0].strip(), function)
        return function if isinstance(function, str) and function != "linear" else None
    return None


def _activation_quantizer(spec: QuantizationSpec, name: str, function: str | None, roles: dict) -> str | None:
    """The `activation` quantizer text for this layer's function, or None to leave it in float."""
    text = roles.get("activation")
    if not text or function is None:
        return None
    if _COMPUTES.get(text.split("(")[0].strip()) == function:
        return text
    if spec.layers.get(name, {}).get("activation"):
        raise QuantizationConfigError(f"{spec.origin}.layers.{name}.activation: {_mismatch(name, function, text)}")
    return None


def activation_mismatch(layer, text: str) -> str | None:
    """Why the activation quantizer `text` cannot stand for `layer`'s activation; None when it can (or the
    layer has no activation that a quantizer replaces)."""
    function = _function_of(layer, layer.get_config())
    if function is None or _COMPUTES.get(text.split("(")[0].strip()) == function:
        return None
    return _mismatch(layer.name, function, text)


def recorded_activation_mismatch(layer, text: str) -> str | None:
    """`activation_mismatch` of a layer's record (`record.LayerRecord`), of whichever framework: a QActivation's
    quantizer, a plain ReLU, or the activation a Conv/Dense or Activation layer applies."""
    if layer.class_name == front.ACTIVATION:
        function = _COMPUTES.get(layer.applies.class_name) if layer.applies is not None else None
    elif layer.role == "ReLU":
        plain = not any(layer.options.get(key) for key in ("max_value", "negative_slope", "threshold"))
        function = "relu" if plain else None
    elif layer.role == "Activation" or (layer.kind is not None and layer.precision != "recurrent"):
        activation = layer.activation
        function = (activation.function or activation.class_name) if activation is not None else None
        function = _COMPUTES.get(function.split("(")[0].strip(), function) if isinstance(function, str) else None
        function = function if function != "linear" else None
    else:
        function = None
    if function is None or _COMPUTES.get(text.split("(")[0].strip()) == function:
        return None
    return _mismatch(layer.name, function, text)


def _mismatch(name: str, function: str, text: str) -> str:
    fitting = sorted(q for q, f in _COMPUTES.items() if f == function)
    return (
        f"{text!r} does not compute {function!r}, the activation of layer '{name}'; expected "
        f"{' or '.join(fitting) if fitting else 'no activation quantizer (it stays in float)'}"
    )


def _fold_batchnorms(model, config: dict, weights: dict) -> None:
    """Fold each BatchNormalization that directly follows a linear Conv/Dense, depthwise or separable
    convolution (its only consumer) into it."""
    graph = LayerGraph(model, TensorFlowKeras)  # a tf_keras model, read as every tf_keras front end reads it
    for name in list(graph.layers):
        layer = graph.layers[name]
        if graph.class_of(name) != "BatchNormalization" or len(graph.inbound[name]) != 1:
            continue
        source = graph.inbound[name][0]
        producer = graph.layers[source]
        if (
            not getattr(kind_of(producer), "folds_batchnorm", False)
            or front.weight_quantizer(producer, "kernel") is not None  # quantized already: folding changes it
            or graph.outbound[source] != [name]
            or producer.get_config()["activation"] != "linear"
            or layer.axis not in ([-1], [len(layer.input_shape) - 1])
        ):
            continue
        gamma, beta, mean, variance = _bn_parameters(layer)
        scale = gamma / np.sqrt(variance + layer.epsilon)
        weights[source] = folded_weights(weights[source], producer.use_bias, scale, beta - mean * scale)
        _fold_into(config, name, source)


def folded_weights(weights: list, use_bias: bool, scale: np.ndarray, shift: np.ndarray) -> list:
    """A linear layer's weights with `y * scale + shift` folded in, its output channels last: a Conv/Dense
    kernel's last axis; a depthwise kernel's last two (input channel, multiplier); a separable layer's pointwise
    kernel (its depthwise one is left as it is). The bias is added where the layer had none."""
    *kernels, bias = weights if use_bias else [*weights, 0.0]
    last = kernels[-1]
    if len(kernels) == 1 and last.ndim == 4 and last.shape[-2] * last.shape[-1] == scale.size != last.shape[-1]:
        kernels[-1] = last * scale.reshape(last.shape[-2:])  # depthwise: channel c, multiplier m is output c*M + m
    else:
        kernels[-1] = last * scale
    return [*(kernel.astype(np.float32) for kernel in kernels), (bias * scale + shift).astype(np.float32)]


def _bn_parameters(layer):
    values = dict(zip([w.name.split("/")[-1].split(":")[0] for w in layer.weights], layer.get_weights()))
    channels = layer.moving_mean.shape[0]
    return (
        values.get("gamma", np.ones(channels)),
        values.get("beta", np.zeros(channels)),
        values["moving_mean"],
        values["moving_variance"],
    )


def _fold_into(config: dict, name: str, producer: str) -> None:
    """Remove the folded layer `name` from a model config; `producer`, which now holds its scale, gets a bias."""
    drop_from_config(config, name)
    next(entry for entry in config["layers"] if entry["config"]["name"] == producer)["config"]["use_bias"] = True
