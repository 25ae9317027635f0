"""tf_keras (Keras 2) model files: the allow-list their configs are checked against, then load and save, holds
and QKeras quantizers included."""

from functools import lru_cache
from pathlib import Path

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.model_files import FilePolicy, check_model_configs, check_model_file, write_model_file

CODE_LAYERS = frozenset({"Lambda", "TFOpLambda", "SlicingOpLambda"})


@lru_cache(maxsize=1)
def allowed_classes() -> frozenset:
    """Class names a model config may name: tf_keras' and QKeras' layers and objects, and fpgaprune's."""
    from fpgaprune.frontends.qkeras.keras2 import keras, qkeras_objects

    names = {"Functional", "Sequential", "Model", "HoldConstraint", "fpgaprune>HoldConstraint"}
    for module in (
        keras.layers,
        keras.initializers,
        keras.regularizers,
        keras.constraints,
        keras.optimizers,
        keras.losses,
        keras.metrics,
        keras.optimizers.schedules,
    ):
        names.update(name for name, value in vars(module).items() if isinstance(value, type))
    names.update(qkeras_objects())
    return frozenset(names - CODE_LAYERS)


POLICY = FilePolicy(
    framework="tf_keras, QKeras",
    classes=allowed_classes,
    modules=("keras", "tf_keras", "qkeras", "fpgaprune", "builtins", "numpy"),
    code_layers=CODE_LAYERS,
    markers=frozenset({"__tuple__", "__numpy__", "__tensor__", "__bytes__", "__typespec__", "function"}),
)


def model_objects() -> dict:
    """The custom objects a held QKeras model's config names (QKeras' and the hold constraint)."""
    from fpgaprune.frontends.qkeras.holds import HoldConstraint
    from fpgaprune.frontends.qkeras.keras2 import qkeras_objects

    return {**qkeras_objects(), "HoldConstraint": HoldConstraint, "fpgaprune>HoldConstraint": HoldConstraint}


def save_model(model, path) -> Path:
    """Save `model` (with optimizer state when compiled) to a `.keras` or `.h5` file, atomically."""
    return write_model_file(model, path)


def load_model(path, compile: bool = True, trust_code: bool = False):
    """Load a tf_keras or QKeras model saved by `save_model` (or by Keras), holds included.

    The file's config is checked against the allow-list first: a `Lambda` or a foreign module is refused with
    one line unless `trust_code=True`. Any failure to load is one ModelFileError line.
    """
    from fpgaprune.frontends.qkeras.keras2 import keras

    path = check_model_file(path)
    check_model_configs(path, POLICY, trust_code)
    try:
        return keras.models.load_model(path, custom_objects=model_objects(), compile=compile, safe_mode=not trust_code)
    except Exception as error:  # noqa: BLE001 - Keras raises many types for a bad file; the user gets one line.
        raise ModelFileError(
            f"{path}: could not load the model ({type(error).__name__}: {first_line(error)})"
        ) from error


def model_from_json(path: Path, text: str, weights: Path, trust_code: bool = False):
    """A Keras 2.0-2.4, tf_keras or QKeras architecture (checked against POLICY) with its HDF5 weights."""
    from fpgaprune.frontends.qkeras.keras2 import keras
    from fpgaprune.model_json import built_from_json

    return built_from_json(keras, text, model_objects(), path, weights)
