"""tf_keras' and QKeras' layer classes, bound to fpgaprune's layer kinds (`layer_kinds.py`). QKeras is bound
only where `tf.keras` is tf_keras (`fpgaprune.support.environment`); tf_keras' classes always are."""

import tf_keras

from fpgaprune.model.layer_kinds import ROLES, bind, bind_role
from fpgaprune.support.environment import legacy_keras

FLOAT_CLASSES = {
    "Conv1D": tf_keras.layers.Conv1D,
    "Conv2D": tf_keras.layers.Conv2D,
    "Dense": tf_keras.layers.Dense,
    "DepthwiseConv2D": tf_keras.layers.DepthwiseConv2D,
    "SeparableConv2D": tf_keras.layers.SeparableConv2D,
    "LSTM": tf_keras.layers.LSTM,
    "GRU": tf_keras.layers.GRU,
}
# Subclasses of the classes above that are other layers (their kernels mean something else)
OTHER_LAYERS = [tf_keras.layers.Conv1DTranspose, tf_keras.layers.Conv2DTranspose]
CLASSES: dict = {}  # kind -> (the tf_keras class, its QKeras twin)

if legacy_keras():
    import qkeras

    from fpgaprune.frontends.qkeras.keras2 import patch_qkeras

    patch_qkeras()

    QUANTIZED = {
        "Conv1D": qkeras.QConv1D,
        "Conv2D": qkeras.QConv2D,
        "Dense": qkeras.QDense,
        "DepthwiseConv2D": qkeras.QDepthwiseConv2D,
        "SeparableConv2D": qkeras.QSeparableConv2D,
        "LSTM": qkeras.QLSTM,
        "GRU": qkeras.QGRU,
    }
    CLASSES = {kind: (float_class, QUANTIZED[kind]) for kind, float_class in FLOAT_CLASSES.items()}
    # QDepthwiseConv2DBatchnorm, which hls4ml 1.3 cannot parse, is named at validate and on the zeros line
    OTHER_LAYERS += [qkeras.QConv2DTranspose, qkeras.QDepthwiseConv2DBatchnorm]
QUANTIZED_CLASS = {kind: quantized.__name__ for kind, (_, quantized) in CLASSES.items()}

for _kind, _float_class in FLOAT_CLASSES.items():
    bind(_kind, _float_class, *CLASSES.get(_kind, ())[1:])
bind(None, *OTHER_LAYERS)
for _role in ROLES:  # the layers with no weight to hold: tf_keras names them as the roles are named
    if isinstance(getattr(tf_keras.layers, _role, None), type):
        bind_role(_role, getattr(tf_keras.layers, _role))
if legacy_keras():
    bind("Conv2DBatchnorm", qkeras.QConv2DBatchnorm)  # QKeras' fused layer: a kind of its own, no float twin
    bind_role(None, qkeras.QBatchNormalization, qkeras.QActivation)  # QKeras' own, not the float ones
