"""Tiny models, one per maskable layer class, each named 'layer' in front of a Dense 'head': tf_keras and QKeras
(`BUILDERS`), and the same float layers in Keras 3 (`KERAS3_BUILDERS`), each with its Keras' optimizers."""

import keras as keras3
import numpy as np
import qkeras

from fpgaprune.tfk import keras

Q8 = "quantized_bits(8,0,alpha=1)"


def _conv(layer, input_shape, batch_norm=True, k=keras):
    body = [k.Input(input_shape), layer]
    if batch_norm:
        body.append(k.layers.BatchNormalization(name="bn"))
    body += [k.layers.ReLU(), k.layers.Flatten(), k.layers.Dense(3, name="head")]
    return k.Sequential(body)


def _float_builders(k) -> dict:
    """The float layers, built with Keras module `k` (tf_keras or Keras 3)."""
    l2 = {"kernel_regularizer": k.regularizers.l2(1e-3)}
    return {
        "Conv1D": lambda: _conv(k.layers.Conv1D(4, 3, name="layer", **l2), (8, 3), k=k),
        "Conv2D": lambda: _conv(k.layers.Conv2D(4, 3, name="layer", **l2), (5, 5, 2), k=k),
        "DepthwiseConv2D": lambda: _conv(k.layers.DepthwiseConv2D(3, depth_multiplier=2, name="layer"), (5, 5, 2), k=k),
        "SeparableConv2D": lambda: _conv(k.layers.SeparableConv2D(4, 3, name="layer"), (5, 5, 2), k=k),
        "Dense": lambda: _conv(k.layers.Dense(6, name="layer", **l2), (7,), k=k),
        "LSTM": lambda: _conv(k.layers.LSTM(4, name="layer"), (5, 3), batch_norm=False, k=k),
        "GRU": lambda: _conv(k.layers.GRU(4, name="layer"), (5, 3), batch_norm=False, k=k),
    }


KERAS3_BUILDERS = _float_builders(keras3)
BUILDERS = {
    **_float_builders(keras),
    "QConv1D": lambda: _conv(qkeras.QConv1D(4, 3, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (8, 3)),
    "QConv2D": lambda: _conv(qkeras.QConv2D(4, 3, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 5, 2)),
    "QConv2DBatchnorm": lambda: _conv(  # QKeras' fused layer: its raw kernel held, its folded one computed
        qkeras.QConv2DBatchnorm(4, 3, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 5, 2)
    ),
    "QDepthwiseConv2D": lambda: _conv(
        qkeras.QDepthwiseConv2D(3, depthwise_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 5, 2)
    ),
    "QDense": lambda: _conv(qkeras.QDense(6, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (7,)),
    "QSeparableConv2D": lambda: _conv(
        qkeras.QSeparableConv2D(4, 3, depthwise_quantizer=Q8, pointwise_quantizer=Q8, bias_quantizer=Q8, name="layer"),
        (5, 5, 2),
    ),
    "QGRU": lambda: _conv(
        qkeras.QGRU(4, kernel_quantizer=Q8, recurrent_quantizer=Q8, bias_quantizer=Q8, name="layer"),
        (5, 3),
        batch_norm=False,
    ),
    "QLSTM": lambda: _conv(
        qkeras.QLSTM(4, kernel_quantizer=Q8, recurrent_quantizer=Q8, bias_quantizer=Q8, name="layer"),
        (5, 3),
        batch_norm=False,
    ),
}


def build(kind: str, seed: int = 0, front_end: str = "tf_keras"):
    keras.utils.set_random_seed(seed)
    keras3.utils.set_random_seed(seed)
    model = (KERAS3_BUILDERS if front_end == "keras3" else BUILDERS)[kind]()
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(32,) + tuple(model.inputs[0].shape[1:])).astype(np.float32)
    y = rng.integers(0, 3, size=32)
    return model, x, y


OPTIMIZERS = {
    "SGD-momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "Adam": lambda: keras.optimizers.Adam(1e-2),
    "AdamW": lambda: keras.optimizers.AdamW(1e-2, weight_decay=0.1),
    "RMSprop": lambda: keras.optimizers.RMSprop(1e-2, momentum=0.5),
    "Adagrad": lambda: keras.optimizers.Adagrad(0.1),
    "legacy-Adam": lambda: keras.optimizers.legacy.Adam(1e-2),
    "Adam-EMA": lambda: keras.optimizers.Adam(1e-2, use_ema=True, ema_momentum=0.9),  # EMA copied in at the end
}
KERAS3_OPTIMIZERS = {
    "SGD-momentum": lambda: keras3.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "Adam": lambda: keras3.optimizers.Adam(1e-2),
    "AdamW": lambda: keras3.optimizers.AdamW(1e-2, weight_decay=0.5),
    "RMSprop": lambda: keras3.optimizers.RMSprop(1e-2, momentum=0.5),
    "Adagrad": lambda: keras3.optimizers.Adagrad(0.1),
    "Adam-accumulate": lambda: keras3.optimizers.Adam(1e-2, gradient_accumulation_steps=2),
    "Adam-EMA": lambda: keras3.optimizers.Adam(1e-2, use_ema=True, ema_momentum=0.9),
}

LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
KERAS3_LOSS = keras3.losses.SparseCategoricalCrossentropy(from_logits=True)
FRONT_ENDS = {
    "tf_keras": (keras, BUILDERS, OPTIMIZERS, LOSS),
    "keras3": (keras3, KERAS3_BUILDERS, KERAS3_OPTIMIZERS, KERAS3_LOSS),
}
