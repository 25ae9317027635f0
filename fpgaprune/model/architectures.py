"""The built-in example networks (`small_cnn`, `original_question_cnn`): tf_keras models, which the tf_keras
front end builds (its `user_module("architectures")`); imported on first use here."""

from fpgaprune.framework import keras_front_end


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(keras_front_end(2).user_module("architectures"), name)
