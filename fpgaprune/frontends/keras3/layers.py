"""Keras 3's layer classes, bound to fpgaprune's layer kinds (`layer_kinds.py`)."""

import keras

from fpgaprune.model.layer_kinds import ROLES, bind, bind_role

CLASSES = {
    "Conv1D": keras.layers.Conv1D,
    "Conv2D": keras.layers.Conv2D,
    "Dense": keras.layers.Dense,
    "DepthwiseConv2D": keras.layers.DepthwiseConv2D,
    "SeparableConv2D": keras.layers.SeparableConv2D,
    "LSTM": keras.layers.LSTM,
    "GRU": keras.layers.GRU,
}
# Layers whose kernels mean something else, in case a Keras version derives them from a class above
OTHER_LAYERS = (keras.layers.Conv1DTranspose, keras.layers.Conv2DTranspose)

# Keras 3's DepthwiseConv2D keeps its depthwise kernel as `kernel`; users still write layer/depthwise_kernel
ATTRIBUTES = {"DepthwiseConv2D": {"depthwise_kernel": "kernel"}}

for _kind, _class in CLASSES.items():
    bind(_kind, _class, attributes=ATTRIBUTES.get(_kind))
bind(None, *OTHER_LAYERS)
for _role in ROLES:  # the layers with no weight to hold: Keras 3 names them as the roles are named
    if isinstance(getattr(keras.layers, _role, None), type):
        bind_role(_role, getattr(keras.layers, _role))
