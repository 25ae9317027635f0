"""tf_keras (Keras 2), for your own scripts: `from fpgaprune.tfk import keras`. It belongs to the tf_keras + QKeras
front end (`user_module("tfk")`), which sets `TF_USE_LEGACY_KERAS` before TensorFlow loads; imported on first use
here. Nothing in fpgaprune outside its front ends uses this module."""

from fpgaprune.framework import keras_front_end

NAMES = ("keras",)  # what it holds, imported on first use


def __getattr__(name: str):
    if name not in NAMES:
        raise AttributeError(f"module 'fpgaprune.tfk' has no attribute {name!r} (it holds: {', '.join(NAMES)})")
    return keras_front_end(2).user_module("tfk").keras
