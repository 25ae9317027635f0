"""Keras 3 model files: the allow-list their configs are checked against, then load and save, holds included.

Keras 3 resolves an object by its `registered_name` before its `module`, so both are checked. Its configs carry
data markers (`__keras_tensor__`, `__tuple__`, `__slice__`, `__ellipsis__`, ...), and one code marker,
`__lambda__`, which is refused, as are the layers that hold code or load it from elsewhere (`Lambda`,
`TorchModuleWrapper`, `JaxLayer`, `FlaxLayer`, `TFSMLayer`). Nothing here can be trusted in: a Keras 3 file
that needs code is not one fpgaprune can convert for hls4ml anyway. Keras 3's own `safe_mode` stays on.
"""

from functools import lru_cache
from pathlib import Path

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.frontends.tensorflow.saving import write_model_file
from fpgaprune.masking import enforce
from fpgaprune.model.files import FilePolicy, check_model_configs, check_model_file
from fpgaprune.model.keras_json import built_from_json

CODE_LAYERS = frozenset({"Lambda", "TorchModuleWrapper", "JaxLayer", "FlaxLayer", "TFSMLayer"})
HOLD = "fpgaprune>HoldConstraint"


@lru_cache(maxsize=1)
def allowed_classes() -> frozenset:
    """Class names a Keras 3 config may name: Keras' layers, models and objects, and fpgaprune's hold."""
    import keras

    names = {"Functional", "Sequential", "Model", "HoldConstraint", "DTypePolicy", "FloatDTypePolicy"}
    for module in (
        keras.layers,
        keras.initializers,
        keras.regularizers,
        keras.constraints,
        keras.optimizers,
        keras.losses,
        keras.metrics,
        keras.optimizers.schedules,
        keras.dtype_policies,
    ):
        names.update(name for name, value in vars(module).items() if isinstance(value, type))
    return frozenset(names - CODE_LAYERS)


@lru_cache(maxsize=1)
def _functions() -> frozenset:
    """Keras' own functions a config may name (an activation, loss or metric given as a function)."""
    import keras

    return frozenset(
        name
        for module in (keras.activations, keras.losses, keras.metrics)
        for name, value in vars(module).items()
        if callable(value) and not isinstance(value, type)
    )


def _registered(name: str) -> bool:
    """Keras' own objects (registered as themselves or under "keras>") and fpgaprune's hold."""
    package, _, plain = name.rpartition(">")
    return name == HOLD or (package in ("", "keras") and (plain in allowed_classes() or plain in _functions()))


POLICY = FilePolicy(
    framework="Keras 3",
    classes=allowed_classes,
    modules=("keras", "fpgaprune", "builtins", "numpy"),
    code_layers=CODE_LAYERS,
    trustable=False,
    registered=_registered,
    markers=frozenset(
        {
            "__keras_tensor__",
            "__tuple__",
            "__numpy__",
            "__tensor__",
            "__bytes__",
            "__slice__",
            "__ellipsis__",
            "__typespec__",
            "function",
        }
    ),
    code_markers=frozenset({"__lambda__"}),
)


def model_objects() -> dict:
    from fpgaprune.frontends.keras3.holds import HoldConstraint

    return {HOLD: HoldConstraint, "HoldConstraint": HoldConstraint}


def save_model(model, path) -> Path:
    """Save `model` (with optimizer state when compiled) to a `.keras` or `.h5` file, atomically."""
    return write_model_file(model, path)


def load_model(path, compile: bool = True, trust_code: bool = False):
    """Load a Keras 3 model file (holds included) after its configs passed the allow-list; one line on failure."""
    path = check_model_file(path)
    check_model_configs(path, POLICY)
    return load_keras3(path, compile=compile)


def load_keras3(path: Path, compile: bool = True):
    """Keras 3's safe load of a checked file, one line on failure; the holds guarded."""
    import keras

    try:
        model = keras.saving.load_model(path, custom_objects=model_objects(), compile=compile, safe_mode=True)
    except Exception as error:  # noqa: BLE001 - Keras raises many types for a bad file; the user gets one line.
        raise ModelFileError(
            f"{path}: could not load the model ({type(error).__name__}: {first_line(error)})"
        ) from error
    enforce(model)  # guard the held variables against assignments that skip the constraint (an EMA copy)
    return model


def model_from_json(path: Path, text: str, weights: Path, trust_code: bool = False):
    """A Keras 3 architecture (checked against POLICY) with its HDF5 weights."""
    import keras

    model = built_from_json(keras, text, model_objects(), path, weights)
    enforce(model)
    return model
