"""tf_keras (Keras 2) and QKeras' custom objects, for your own scripts: `from fpgaprune.tfk import keras`. They
belong to the tf_keras + QKeras front end (`frontends/qkeras/keras2.py`), imported on first use here; nothing in
fpgaprune outside its front ends uses this module."""

import importlib


def __getattr__(name: str):
    return getattr(importlib.import_module("fpgaprune.frontends.qkeras.keras2"), name)
