"""A Keras 3 model's HGQ2 twin: the same graph and layer names, Conv1D/Conv2D/Dense as HGQ2's quantized layers
(weights copied exactly, holds carried over), with the EBOPs penalty on."""

import keras

from fpgaprune.errors import UnsupportedLayerError
from fpgaprune.frontends.hgq2.quantizers import is_hgq2
from fpgaprune.frontends.hgq2.settings import Hgq2Settings, bias_config, input_config, weight_config

_QUANTIZED = {"Conv1D": "QConv1D", "Conv2D": "QConv2D", "Dense": "QDense"}
_DROPPED_KEYS = ("lora_rank", "lora_alpha", "quantization_config", "dtype")
_UNSUPPORTED = ("BatchNormalization", "DepthwiseConv2D", "SeparableConv2D", "LSTM", "GRU", "SimpleRNN")


def _quantized_layer(layer, settings: Hgq2Settings):
    import hgq.layers

    name = type(layer).__name__
    if name in _UNSUPPORTED:
        raise UnsupportedLayerError(
            f"layer '{layer.name}' is a {name}, which fpgaprune does not yet quantize with HGQ2 "
            "(Conv1D, Conv2D and Dense are; fold a BatchNormalization into the layer before it first)"
        )
    if name not in _QUANTIZED:
        return _relu_as_activation(layer)
    config = {k: v for k, v in layer.get_config().items() if k not in _DROPPED_KEYS}
    rank = len(layer.kernel.shape)
    quantized = getattr(hgq.layers, _QUANTIZED[name])
    return quantized(
        **config,
        kq_conf=weight_config(settings, rank),
        bq_conf=bias_config(settings),
        iq_conf=input_config(settings),
        enable_ebops=True,
        beta0=settings.beta0,
    )


def _relu_as_activation(layer):
    """A copy of the layer; a plain ReLU layer as Activation('relu'): hls4ml 1.3 types a ReLU layer unsigned
    without clamping its negative inputs (BitExact), and converts Activation('relu') exactly."""
    if type(layer).__name__ == "ReLU" and _plain_relu(layer):
        return keras.layers.Activation("relu", name=layer.name)
    return layer.__class__.from_config(layer.get_config())


def _plain_relu(layer) -> bool:
    config = layer.get_config()
    return config.get("max_value") is None and not config.get("negative_slope") and not config.get("threshold")


def hgq2_twin(model, settings: Hgq2Settings):
    """The HGQ2 model of a Keras 3 `model` (its holds' constraints travel in the layers' configs); a model with
    HGQ2 layers already: a copy, its quantizers' trained widths included."""
    if any(map(is_hgq2, model.layers)):
        twin = keras.models.clone_model(model, clone_function=_relu_as_activation)
        twin.set_weights(model.get_weights())
        return twin
    twin = keras.models.clone_model(model, clone_function=lambda layer: _quantized_layer(layer, settings))
    for layer in model.layers:
        target = twin.get_layer(layer.name)
        for variable, source in zip(_float_weights(target), layer.weights):
            variable.assign(source)
    if settings.beta_final is not None and settings.beta0 > 0:
        twin.beta_schedule = (settings.beta0, settings.beta_final)  # read by QAT (`training.fit`)
    return twin


def _float_weights(layer) -> list:
    """The layer's own weights (kernel, bias, ...) in the order of its float twin's, without its quantizers'."""
    quantizers = {id(v) for q in ("_kq", "_bq", "_iq", "_oq") for v in getattr(getattr(layer, q, None), "weights", ())}
    return [v for v in layer.weights if id(v) not in quantizers and not v.path.endswith(("/beta", "/ebops"))]
