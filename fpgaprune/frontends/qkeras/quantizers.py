"""What a QKeras layer's quantizers are and hold: the attribute names QKeras keeps them under, the fixed-point
type of a quantizer's outputs, and what it makes of 0. The precision derivation, C-sim's exactness bound, the
profile and the manifest ask the front end (`front_end.py`), which asks this module.
"""

import numpy as np

from fpgaprune.quantize.fixed_types import FixedType

ACTIVATION = "QActivation"
BATCHNORM = "QBatchNormalization"
LSTM = "QLSTM"
GRU = "QGRU"


def weight_quantizer(layer, role: str):
    """The quantizer of one of a layer's weights, by role ("kernel", "bias", "depthwise", "pointwise",
    "recurrent", "state", or a batch normalization's "gamma", "beta", "mean", "variance"), or None."""
    return getattr(layer, f"{role}_quantizer_internal", None)


def activation_quantizer(layer):
    """The quantizer a QActivation layer applies, or None for any other layer."""
    return getattr(layer, "quantizer", None) if type(layer).__name__ == ACTIVATION else None


def quantized(layer, role: str, values) -> np.ndarray:
    """`values` as the layer computes with them: folded (a fused layer's), then through its quantizer for `role`
    (unchanged when it has none), in float64."""
    quantizer, values = weight_quantizer(layer, role), folded(layer, role, values)
    return np.asarray(quantizer(values) if quantizer is not None else values, np.float64)


def folded(layer, role: str, values):
    """A kernel or bias as a fused layer (QConv2DBatchnorm) computes with it at inference: its batch
    normalization folded in with the moving statistics, by the same TensorFlow operations as QKeras'
    `get_folded_weights` (so bit for bit its values); `values` as they are for any other layer."""
    batchnorm = getattr(layer, "batchnorm", None)
    if role not in ("kernel", "bias") or batchnorm is None or not hasattr(layer, "get_folded_weights"):
        return values
    import tensorflow as tf

    inv = tf.math.rsqrt(batchnorm.moving_variance + batchnorm.epsilon)
    if batchnorm.gamma is not None:
        inv *= batchnorm.gamma
    values = tf.constant(np.asarray(values, np.float32))
    return inv * values if role == "kernel" else inv * (values - batchnorm.moving_mean) + batchnorm.beta


def quantizer_bits(layer, role: str, default: int = 32) -> int:
    """The bit width of a layer's quantizer for `role` (`default` for a float weight)."""
    return int(getattr(weight_quantizer(layer, role), "bits", default))


def pruned_values(quantizer, values: np.ndarray, pruned: np.ndarray) -> np.ndarray:
    """What the quantizer makes of the `pruned` entries (set to 0) of a weight whose other entries are `values`:
    pruned weights need a quantizer that keeps 0 (quantized_bits(1,0) and binary map it to 1, quantized_po2 to
    0.0625; a per-channel scale depends on the other entries, so they take part)."""
    import tensorflow as tf

    probe = np.where(pruned, 0.0, np.where(values == 0, 0.5, values)).astype(np.float32)
    return np.asarray(quantizer(tf.constant(probe)))[pruned]


def zero_of(quantizer) -> float:
    """What the quantizer makes of a weight that is 0 with all its neighbours (`pruned_values` of all zeros)."""
    return float(pruned_values(quantizer, np.zeros(4, np.float32), np.ones(4, bool))[0])


def quantizer_type(quantizer, activation: bool = False) -> FixedType | None:
    """The fixed-point type of a QKeras quantizer's outputs, or None when it is not a plain fixed grid."""
    fixed = _grid_type(quantizer)
    return FixedType(fixed.width, fixed.integer, fixed.signed, True) if fixed and activation else fixed


def _grid_type(quantizer) -> FixedType | None:
    name = type(quantizer).__name__
    config = quantizer.get_config() if hasattr(quantizer, "get_config") else {}
    if name == "quantized_bits" and config.get("alpha") in (None, 1, 1.0, "1"):
        keep_negative = bool(config.get("keep_negative", True))
        return FixedType(int(config["bits"]), int(config["integer"]) + int(keep_negative), keep_negative)
    if name == "quantized_relu" and not config.get("negative_slope"):
        return FixedType(int(config["bits"]), int(config["integer"]), False)
    if name == "ternary" and config.get("alpha") in (None, 1, 1.0):
        return FixedType(2, 2, True)
    if name in _HARD and not any(config.get(key) for key in _HARD[name][1:]):  # hard sigmoid/tanh, rounded
        return FixedType(int(config["bits"]), *_HARD[name][0])
    return None


# QKeras' sigmoid and tanh quantizers: bits over [0, 1) or [-1, 1), with no flag set that changes the lower end
# (symmetric). Stochastic rounding applies in training only (QKeras' `_round_through` rounds to nearest at
# inference), so it leaves the exported grid as it is. Without use_real_* they are hls4ml's HardActivation (exact
# on that grid); with it, hls4ml's table (`table_function`), which C-sim is judged by within its bound.
_HARD = {
    "quantized_sigmoid": ((0, False), "symmetric"),
    "quantized_tanh": ((1, True), "symmetric"),
}
_REAL = {"quantized_sigmoid": ("use_real_sigmoid", "sigmoid"), "quantized_tanh": ("use_real_tanh", "tanh")}


def table_function(layer) -> str | None:
    """The function hls4ml reads from a table for a QActivation whose quantizer computes the real sigmoid or
    tanh ("sigmoid", "tanh"); None for any other layer."""
    quantizer = activation_quantizer(layer)
    flag, function = _REAL.get(type(quantizer).__name__, (None, None))
    return function if flag and quantizer.get_config().get(flag) else None


def quantizer_curve(quantizer) -> dict:
    """What a QKeras sigmoid or tanh quantizer computes before it rounds: the real function ({"curve": ...}), or
    the line of QKeras' internal sigmoid ("hard": 0.5x + 0.5, "smooth": 0.1875x + 0.5; a tanh is 2 sigmoid - 1);
    {} for any other quantizer."""
    from qkeras import quantizers as library

    flag, function = _REAL.get(type(quantizer).__name__, (None, None))
    if flag is None:
        return {}
    if quantizer.get_config().get(flag):
        return {"curve": function}
    if library._sigmoid is library.tf.keras.backend.sigmoid:  # set_internal_sigmoid("real")
        return {"curve": "sigmoid" if function == "sigmoid" else "2 sigmoid - 1"}
    slope = 0.5 if library._sigmoid is library.hard_sigmoid else 0.1875
    return {"line": (slope, 0.5)} if function == "sigmoid" else {"line": (2 * slope, 0.0)}


def quantize_array(quantizer, values) -> np.ndarray:
    """`values` (an array) through `quantizer`, in float64."""
    import tensorflow as tf

    return np.asarray(quantizer(tf.constant(np.asarray(values, np.float32))), np.float64)


def quantizer_texts(layer) -> dict:
    """{weight role: its quantizer as the layer's config writes it (`kernel_quantizer`, ...)}."""
    found = {}
    for role in ("kernel", "bias", "depthwise", "pointwise", "recurrent"):
        quantizer = getattr(layer, f"{role}_quantizer", None)
        if quantizer is not None:
            found[role] = str(quantizer)
    return found
