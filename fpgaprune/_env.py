"""Make sure TensorFlow's `tf.keras` is Keras 2 (tf_keras) before anything imports it.

QKeras binds `tensorflow.keras` at import time and hls4ml's Keras-2 converter expects tf_keras layers, so the
whole package runs on tf_keras. TensorFlow reads `TF_USE_LEGACY_KERAS` when `tf.keras` is first touched.
"""

import os
import sys

LEGACY_KERAS_VARIABLE = "TF_USE_LEGACY_KERAS"

FIX = (
    "fpgaprune needs tf.keras to be tf_keras (Keras 2): set TF_USE_LEGACY_KERAS=1 before TensorFlow is imported "
    "(`export TF_USE_LEGACY_KERAS=1`, or `import fpgaprune` before `import tensorflow`)"
)


def set_legacy_keras() -> None:
    """Set TF_USE_LEGACY_KERAS=1 without importing TensorFlow; check at once if TensorFlow is already imported."""
    if "tensorflow" in sys.modules:
        ensure_legacy_keras()
    else:
        os.environ[LEGACY_KERAS_VARIABLE] = "1"


def ensure_legacy_keras() -> None:
    """Set TF_USE_LEGACY_KERAS=1, then check that `tf.keras` really is tf_keras; fail loudly otherwise."""
    already_imported = "tensorflow" in sys.modules
    if not already_imported:
        os.environ[LEGACY_KERAS_VARIABLE] = "1"
    elif os.environ.get(LEGACY_KERAS_VARIABLE, "").lower() not in ("1", "true"):
        # tf.keras is resolved lazily: if nothing has touched it yet, setting the variable now still works.
        os.environ[LEGACY_KERAS_VARIABLE] = "1"
    import tensorflow as tf
    import tf_keras

    if tf.keras.Model is not tf_keras.Model:
        found = getattr(sys.modules.get("keras"), "__version__", "3")
        raise ImportError(f"TensorFlow was imported before fpgaprune and tf.keras is Keras {found}. {FIX}.")
