"""tf_keras (Keras 2) and QKeras' custom objects, for your own scripts: `from fpgaprune.tfk import keras`. They
belong to the tf_keras + QKeras front end (`user_module("tfk")`), imported on first use here; nothing in fpgaprune
outside its front ends uses this module."""

from fpgaprune.framework import keras_front_end


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(keras_front_end(2).user_module("tfk"), name)
