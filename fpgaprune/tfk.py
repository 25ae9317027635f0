"""The one place that names the Keras implementation: tf_keras, plus QKeras' custom objects when installed."""

import tf_keras as keras

from fpgaprune.errors import ModelTypeError


def require_tf_keras_model(model) -> None:
    """Raise a one-line ModelTypeError unless `model` is a tf_keras Sequential or functional model."""
    if isinstance(model, keras.Model):
        if not (isinstance(model, keras.Sequential) or model._is_graph_network):
            raise ModelTypeError(
                f"model '{model.name}' is a subclassed tf_keras.Model; fpgaprune needs a Sequential or functional "
                "model (its layers must be rebuildable from their configs)"
            )
        return
    module = type(model).__module__
    if module.startswith("keras"):
        raise ModelTypeError(
            f"model '{getattr(model, 'name', '?')}' was built with Keras 3 (the `keras` package); build it with "
            "tf_keras instead: `import tf_keras as keras` (or `tf.keras` with TF_USE_LEGACY_KERAS=1)"
        )
    raise ModelTypeError(f"expected a tf_keras.Model, got {type(model).__module__}.{type(model).__name__}")


def qkeras_objects() -> dict:
    """QKeras layers, quantizers and constraints by name, for deserializing QKeras models ({} if absent)."""
    try:
        from qkeras.utils import _add_supported_quantized_objects
    except ImportError:  # QKeras is optional for pure tf_keras models.
        return {}
    objects: dict = {}
    _add_supported_quantized_objects(objects)
    return objects
