"""The quantized model computed exactly: the reference C-sim is compared with.

QKeras computes in float32, so a sum of products wider than 24 bits rounds, and the activation quantizer after
it may round the other way than hls4ml's exact accumulator: differences that are the reference's, not the
design's. The exact copy is the same model in float64 (every sum of up to 53 bits exact):
- each weight is the value its quantizer gives, computed once by QKeras as the layer computes with it (a fused
  layer's folded kernel and bias, a QBatchNormalization's parameters included), and the layer then has no weight
  quantizer;
- each activation quantizer is QKeras' own, applied to the two float32 neighbours of the exact value (QKeras'
  `quantized_relu` casts its input to float32). Where both give the same output, which is everywhere but within
  a float32 step of a rounding boundary, that is the exact output; where they part, the value's rounding onto
  the quantizer's grid picks which of the two it is.
Recurrent layers keep their quantizers (their tables are judged by a heuristic tolerance, `hls/tolerance.py`).
"""

import copy
import inspect
from contextlib import contextmanager

import numpy as np

from fpgaprune.errors import ModelTypeError
from fpgaprune.frontends.qkeras import quantizers as front
from fpgaprune.frontends.qkeras.keras2 import keras, qkeras_objects

# QKeras' fused layers, computed as the plain layer of their folded weights
_UNFUSED = {"QConv2DBatchnorm": "QConv2D", "QDepthwiseConv2DBatchnorm": "QDepthwiseConv2D"}
# a weight variable's short name -> its quantizer's role (a QBatchNormalization's parameters included)
_ROLES = {
    "kernel": "kernel",
    "bias": "bias",
    "depthwise_kernel": "depthwise",
    "pointwise_kernel": "pointwise",
    "gamma": "gamma",
    "beta": "beta",
    "moving_mean": "mean",
    "moving_variance": "variance",
}
_RECURRENT = ("QLSTM", "QGRU", "QSimpleRNN")


@contextmanager
def float64():
    """tf_keras' float type set to float64 (QKeras' `cast_to_floatx` follows it) for a build or a predict."""
    backend = keras.backend
    before = backend.floatx()
    backend.set_floatx("float64")
    try:
        yield
    finally:
        backend.set_floatx(before)


def exact_copy(model):
    """`model` (tf_keras + QKeras) as its exact float64 copy, same layer names."""
    config = copy.deepcopy(model.get_config())
    for entry in config["layers"]:
        _exact_entry(entry)
    cls = keras.Sequential if isinstance(model, keras.Sequential) else keras.Model
    with float64():
        try:
            exact = cls.from_config(config, custom_objects=qkeras_objects())
        except Exception as error:  # noqa: BLE001 - tf_keras reports a config it cannot build in many ways
            raise ModelTypeError(
                f"model '{model.name}': its exact float64 copy (C-sim's reference) cannot be built "
                f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
            ) from None
    originals = {layer.name: layer for layer in model.layers}
    for layer in exact.layers:
        if layer.name in originals:
            _copy_weights(originals[layer.name], layer)
            _exact_activation(originals[layer.name], layer)
    return exact


def _exact_entry(entry: dict) -> None:
    """One layer's config in float64, without weight quantizers or constraints (the weights come quantized)."""
    config, class_name = entry["config"], entry["class_name"]
    config["dtype"] = "float64"
    for key in [key for key in config if key.endswith("_constraint")]:
        config[key] = None
    if class_name in _RECURRENT:
        return
    if class_name in _UNFUSED:
        entry["class_name"] = _UNFUSED[class_name]
        entry.pop("module", None)
        entry.pop("registered_name", None)
        accepted = _arguments(entry["class_name"])
        entry["config"] = config = {key: value for key, value in config.items() if key in accepted}
        config["use_bias"] = True
    for key in [key for key in config if key.endswith("_quantizer") and key[: -len("_quantizer")] in _ROLES.values()]:
        config[key] = None


def _arguments(class_name: str) -> set:
    """What a QKeras layer class's constructor takes (its own and Keras' base Layer's)."""
    cls = qkeras_objects()[class_name]
    return set(inspect.signature(cls.__init__).parameters) | {"name", "dtype", "trainable"}


def _copy_weights(original, layer) -> None:
    """`layer`'s weights from `original`'s: a quantized weight as its quantizer gives it (folded, for a fused
    layer), any other as it is."""
    values = {_short(weight.name): weight.numpy() for weight in original.weights}
    recurrent = type(original).__name__ in _RECURRENT
    exact = []
    for weight in layer.weights:
        short = _short(weight.name)
        role = None if recurrent else _ROLES.get(short)
        value = values.get(short, np.zeros(weight.shape, np.float32))
        exact.append(front.quantized(original, role, value) if role else np.asarray(value, np.float64))
    layer.set_weights(exact)


def _short(name: str) -> str:
    return name.split("/")[-1].split(":")[0]


def _exact_activation(original, layer) -> None:
    """The layer's activation quantizer (a QActivation's, or one inside a Conv/Dense) made exact."""
    if type(original).__name__ == front.ACTIVATION:
        layer.quantizer = ExactQuantizer(front.activation_quantizer(original))
    elif type(original).__name__ not in _RECURRENT and hasattr(getattr(original, "activation", None), "get_config"):
        layer.activation = ExactQuantizer(original.activation)


class ExactQuantizer:
    """A QKeras activation quantizer applied exactly to a float64 value (module docstring)."""

    def __init__(self, quantizer):
        self.quantizer = quantizer
        self.fixed = front.quantizer_type(quantizer)
        self.__name__ = getattr(quantizer, "__name__", type(quantizer).__name__)

    def __call__(self, x):
        import tensorflow as tf

        x = tf.cast(x, tf.float64)
        near = tf.cast(x, tf.float32)
        back = tf.cast(near, tf.float64)
        low = tf.where(back > x, tf.math.nextafter(near, tf.fill(tf.shape(near), -np.inf)), near)
        high = tf.where(back < x, tf.math.nextafter(near, tf.fill(tf.shape(near), np.inf)), near)
        at_low = tf.cast(self.quantizer(low), tf.float64)
        at_high = tf.cast(self.quantizer(high), tf.float64)
        return tf.where(at_low == at_high, at_low, self._between(x, at_low, at_high))

    def _between(self, x, at_low, at_high):
        """Which of the two outputs the exact value `x` rounds to: the one nearer its own rounding onto the
        quantizer's grid (the float32 value's output where the quantizer has no plain grid)."""
        import tensorflow as tf

        if self.fixed is None:
            return tf.cast(self.quantizer(tf.cast(x, tf.float32)), tf.float64)
        scale = 2.0**self.fixed.frac
        on_grid = tf.clip_by_value(tf.round(x * scale) / scale, self.fixed.lo, self.fixed.hi)
        return tf.where(tf.abs(on_grid - at_high) < tf.abs(on_grid - at_low), at_high, at_low)

    def __str__(self) -> str:
        return str(self.quantizer)

    def get_config(self) -> dict:
        return self.quantizer.get_config()
