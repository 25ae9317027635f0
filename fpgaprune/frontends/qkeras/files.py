"""tf_keras (Keras 2) model files: the allow-list their configs are checked against, then load and save, holds
and QKeras quantizers included.

A `.keras` file written by Keras 2.14 (tf.keras 2.14) keeps its layers' weights under
`_layer_checkpoint_dependencies/` in `model.weights.h5`, where tf_keras 2.21 looks under `layers/` (tf-keras moved
them after 2.14: "Layer 'x' expected 3 variables, but received 0"). Such a file is read from a temporary copy
whose groups carry today's names (`current_layout`); the user's file is not touched.
"""

import io
import shutil
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.frontends.tensorflow.saving import write_model_file
from fpgaprune.model.files import FilePolicy, check_model_configs, check_model_file
from fpgaprune.model.keras_json import built_from_json

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
    with current_layout(path) as readable:
        try:
            return keras.models.load_model(
                readable, custom_objects=model_objects(), compile=compile, safe_mode=not trust_code
            )
        except Exception as error:  # noqa: BLE001 - Keras raises many types for a bad file; the user gets one line.
            raise ModelFileError(
                f"{path}: could not load the model ({type(error).__name__}: {first_line(error)})"
            ) from error


OLD_LAYOUT = "_layer_checkpoint_dependencies"  # where Keras 2.14 kept a model's layers in model.weights.h5
WEIGHTS = "model.weights.h5"


class current_layout:  # noqa: N801 - a context manager, used as a function
    """`with current_layout(path) as readable`: the path tf_keras 2.21 reads the model from: `path` itself, or a
    temporary copy of a Keras 2.14 `.keras` archive with its weight groups renamed as 2.21 names them (removed
    on exit). An old layout written by another version is one line saying what to do."""

    def __init__(self, path: Path):
        self.path, self.scratch = Path(path), None

    def __enter__(self) -> Path:
        version = _old_layout_version(self.path)
        if version is None:
            return self.path
        if not version.startswith("2.14"):
            raise ModelFileError(
                f"{self.path}: written by Keras {version}, which keeps its weights under {OLD_LAYOUT}/; tf_keras "
                "2.21 reads that layout here for Keras 2.14 files only: load the model in Keras "
                f"{version} and save it as .h5 (model.save('model.h5'))"
            )
        self.scratch = Path(tempfile.mkdtemp(prefix="fpgaprune-keras214-"))
        copy = self.scratch / self.path.name
        with zipfile.ZipFile(self.path) as source, zipfile.ZipFile(copy, "w") as target:
            for member in source.namelist():
                data = source.read(member)
                target.writestr(member, _renamed_groups(data) if member == WEIGHTS else data)
        return copy

    def __exit__(self, *exc) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _old_layout_version(path: Path) -> str | None:
    """The Keras version that wrote a `.keras` archive whose weights are in Keras 2.14's layout, else None."""
    import json

    import h5py

    if path.suffix != ".keras" or not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as archive:
        if WEIGHTS not in archive.namelist():
            return None
        with h5py.File(io.BytesIO(archive.read(WEIGHTS)), "r") as weights:
            if OLD_LAYOUT not in weights or "layers" in weights:
                return None
        metadata = json.loads(archive.read("metadata.json")) if "metadata.json" in archive.namelist() else {}
    return str(metadata.get("keras_version", "unknown"))


def _renamed_groups(data: bytes) -> bytes:
    """The HDF5 weights file `data` with every `_layer_checkpoint_dependencies` group named `layers`."""
    import h5py

    buffer = io.BytesIO(data)
    with h5py.File(buffer, "r+") as weights:
        found = []
        weights.visit(lambda name: found.append(name) if name.rsplit("/", 1)[-1] == OLD_LAYOUT else None)
        for name in sorted(found, key=len, reverse=True):  # the deepest first: outer renames keep inner paths
            parent, _, _ = name.rpartition("/")
            weights.move(name, f"{parent}/layers" if parent else "layers")
    return buffer.getvalue()


def model_from_json(path: Path, text: str, weights: Path, trust_code: bool = False):
    """A Keras 2.0-2.4, tf_keras or QKeras architecture (checked against POLICY) with its HDF5 weights."""
    from fpgaprune.frontends.qkeras.keras2 import keras

    return built_from_json(keras, text, model_objects(), path, weights)
