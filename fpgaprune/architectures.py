"""The built-in example networks (`small_cnn`, `original_question_cnn`): tf_keras models, which the tf_keras
front end builds (`frontends/qkeras/architectures.py`); imported on first use here."""

import importlib


def __getattr__(name: str):
    return getattr(importlib.import_module("fpgaprune.frontends.qkeras.architectures"), name)
