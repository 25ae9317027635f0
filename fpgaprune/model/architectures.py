"""The built-in example networks (`small_cnn`, `original_question_cnn`): tf_keras models, which the tf_keras
front end builds (its `user_module("architectures")`); imported on first use here."""

from fpgaprune.framework import keras_front_end

NAMES = ("original_question_cnn", "small_cnn")  # what it holds, imported on first use


def __getattr__(name: str):
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (it holds: {', '.join(NAMES)})")
    module = keras_front_end(2).user_module("architectures")
    return module.small_cnn if name == "small_cnn" else module.original_question_cnn
