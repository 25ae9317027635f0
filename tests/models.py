"""Tiny models, one per maskable layer class, each named 'layer' in front of a Dense 'head'."""

import numpy as np
import qkeras

from fpgaprune.tfk import keras

Q8 = "quantized_bits(8,0,alpha=1)"


def _conv(layer, input_shape, batch_norm=True):
    body = [keras.Input(input_shape), layer]
    if batch_norm:
        body.append(keras.layers.BatchNormalization(name="bn"))
    body += [keras.layers.ReLU(), keras.layers.Flatten(), keras.layers.Dense(3, name="head")]
    return keras.Sequential(body)


L2 = {"kernel_regularizer": keras.regularizers.l2(1e-3)}

BUILDERS = {
    "Conv1D": lambda: _conv(keras.layers.Conv1D(4, 3, name="layer", **L2), (8, 3)),
    "Conv2D": lambda: _conv(keras.layers.Conv2D(4, 3, name="layer", **L2), (5, 5, 2)),
    "DepthwiseConv2D": lambda: _conv(keras.layers.DepthwiseConv2D(3, depth_multiplier=2, name="layer"), (5, 5, 2)),
    "SeparableConv2D": lambda: _conv(keras.layers.SeparableConv2D(4, 3, name="layer"), (5, 5, 2)),
    "Dense": lambda: _conv(keras.layers.Dense(6, name="layer", **L2), (7,)),
    "LSTM": lambda: _conv(keras.layers.LSTM(4, name="layer"), (5, 3), batch_norm=False),
    "GRU": lambda: _conv(keras.layers.GRU(4, name="layer"), (5, 3), batch_norm=False),
    "QConv1D": lambda: _conv(qkeras.QConv1D(4, 3, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (8, 3)),
    "QConv2D": lambda: _conv(qkeras.QConv2D(4, 3, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 5, 2)),
    "QDepthwiseConv2D": lambda: _conv(
        qkeras.QDepthwiseConv2D(3, depthwise_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 5, 2)
    ),
    "QDense": lambda: _conv(qkeras.QDense(6, kernel_quantizer=Q8, bias_quantizer=Q8, name="layer"), (7,)),
    "QSeparableConv2D": lambda: _conv(
        qkeras.QSeparableConv2D(4, 3, depthwise_quantizer=Q8, pointwise_quantizer=Q8, bias_quantizer=Q8,
                                name="layer"), (5, 5, 2)
    ),
    "QGRU": lambda: _conv(
        qkeras.QGRU(4, kernel_quantizer=Q8, recurrent_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 3),
        batch_norm=False,
    ),
    "QLSTM": lambda: _conv(
        qkeras.QLSTM(4, kernel_quantizer=Q8, recurrent_quantizer=Q8, bias_quantizer=Q8, name="layer"), (5, 3),
        batch_norm=False,
    ),
}


def build(kind: str, seed: int = 0):
    keras.utils.set_random_seed(seed)
    model = BUILDERS[kind]()
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(32,) + tuple(model.input_shape[1:])).astype(np.float32)
    y = rng.integers(0, 3, size=32)
    return model, x, y


OPTIMIZERS = {
    "SGD-momentum": lambda: keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "Adam": lambda: keras.optimizers.Adam(1e-2),
    "AdamW": lambda: keras.optimizers.AdamW(1e-2, weight_decay=0.1),
    "RMSprop": lambda: keras.optimizers.RMSprop(1e-2, momentum=0.5),
    "Adagrad": lambda: keras.optimizers.Adagrad(0.1),
    "legacy-Adam": lambda: keras.optimizers.legacy.Adam(1e-2),
}

LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
