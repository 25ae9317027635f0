"""The one place that names the Keras 2 implementation: tf_keras, plus QKeras' custom objects when installed."""

from fpgaprune.support.environment import legacy_keras, set_legacy_keras

set_legacy_keras()

import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tensorflow.python.ops import array_ops  # noqa: E402
from tensorflow.python.util import nest  # noqa: E402

from fpgaprune.errors import ModelTypeError  # noqa: E402

# QKeras 0.9.0's QGRU and QSimpleRNN cells call two TensorFlow internals that 2.21 renamed or moved:
# nest.is_sequence (now nest.is_nested) and array_ops.unstack (now tf.unstack). Restore the old names.
if not hasattr(nest, "is_sequence"):
    nest.is_sequence = nest.is_nested
if not hasattr(array_ops, "unstack"):
    array_ops.unstack = tf.unstack


def require_tf_keras_model(model) -> None:
    """Raise a one-line ModelTypeError unless `model` is a tf_keras Sequential or functional model."""
    if isinstance(model, keras.Model):
        if not (isinstance(model, keras.Sequential) or model._is_graph_network):
            raise ModelTypeError(
                f"model '{model.name}' is a subclassed tf_keras.Model; fpgaprune needs a Sequential or functional "
                "model (its layers must be rebuildable from their configs)"
            )
        return
    raise ModelTypeError(f"expected a tf_keras.Model, got {type(model).__module__}.{type(model).__name__}")


def _qactivation_from_config(cls, config: dict):
    activation = config.get("activation")
    if isinstance(activation, dict):  # a serialized quantizer: QKeras' __init__ takes only a string or an object
        from qkeras.quantizers import get_quantizer

        config = {**config, "activation": get_quantizer(activation)}
    return cls(**config)


def patch_qkeras() -> None:
    """QKeras 0.9.0 (its last release) cannot rebuild a QActivation from its own config when its quantizer is an
    object: `get_config()` then holds the quantizer as a dict (Keras 2.4 wrote it so in its files too), and
    `QActivation(activation=dict)` fails. From here on `from_config` builds the quantizer from that dict."""
    from qkeras import QActivation

    if vars(QActivation).get("from_config") is None:
        QActivation.from_config = classmethod(_qactivation_from_config)


def qkeras_objects() -> dict:
    """QKeras layers, quantizers and constraints by name, for deserializing QKeras models ({} if absent)."""
    if not legacy_keras():  # tf.keras is Keras 3 here: QKeras would bind to it (`fpgaprune.support.environment`)
        return {}
    try:
        from qkeras.utils import _add_supported_quantized_objects
    except ImportError:  # QKeras is optional for pure tf_keras models.
        return {}
    patch_qkeras()
    objects: dict = {}
    _add_supported_quantized_objects(objects)
    return objects
