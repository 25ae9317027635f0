"""`fp.load_model` and `fp.save_model`: a model file read by the front end of the framework that wrote it, after its
configs were checked (`model_files`), or a JSON architecture and its HDF5 weights (`model_json`)."""

from pathlib import Path

from fpgaprune.errors import ModelFileError
from fpgaprune.framework import bound, front_end_of, front_ends
from fpgaprune.model.files import OTHER_FRAMEWORKS, keras_major
from fpgaprune.model.keras_json import load_json_model


def front_end_of_file(path):
    """The front end that reads the model file: one that claims its suffix (PyTorch's `.pt`), else tf_keras + QKeras
    for Keras 2 files and Keras 3 for Keras 3 ones."""
    suffix = Path(path).suffix
    for front_end in front_ends():
        if suffix in front_end.file_suffixes:
            return bound(front_end)
    if suffix in OTHER_FRAMEWORKS:
        raise ModelFileError(f"{path}: {OTHER_FRAMEWORKS[suffix]}")
    major = keras_major(path)
    for front_end in front_ends():
        if front_end.keras_major == major:
            return bound(front_end)
    raise ModelFileError(f"{path}: a Keras {major} model file, and no installed front end reads Keras {major}")


def load_model(
    path=None,
    compile: bool = True,
    trust_code: bool = False,
    *,
    json=None,
    weights=None,
    architecture=None,
    arguments=None,
):
    """Load a model file in the framework that wrote it (tf_keras or Keras 3), holds included, after its configs
    were checked against that framework's allow-list; or, with `json` and `weights` instead of `path`, a JSON
    architecture and its HDF5 weights (`model_json`); or a PyTorch state dict (`.pt`) into the `architecture` it
    names (`models.py:ClassName`, built with keyword `arguments`; imported only with `trust_code=True`). Any
    failure is one ModelFileError line."""
    if json is not None or weights is not None:
        if path is not None:
            raise ModelFileError(f"{path}: give a model file, or an architecture (json=) and its weights, not both")
        if json is None:
            raise ModelFileError(f"{weights}: weights need their architecture (json=..., model.json in YAML)")
        return load_json_model(json, weights, trust_code=trust_code)
    if path is None and architecture is not None:  # a PyTorch architecture with no state dict: newly built
        builder = next((f for f in front_ends() if f.builds_architectures), None)
        if builder is None:
            raise ModelFileError(f"{architecture}: a PyTorch architecture; {OTHER_FRAMEWORKS['.pt'].split(': ', 1)[1]}")
        return bound(builder).build(architecture, arguments, trust_code)
    if path is None:
        raise ModelFileError("no model given: a .keras/.h5 file, or an architecture (json=) and its weights")
    front_end = front_end_of_file(path)
    if architecture is not None or arguments is not None:
        if not front_end.file_suffixes:
            raise ModelFileError(f"{path}: a Keras model file names its own architecture; give no architecture=")
        return front_end.load(path, trust_code=trust_code, architecture=architecture, arguments=arguments)
    return front_end.load(path, trust_code=trust_code, compile=compile)


def save_model(model, path) -> Path:
    """Save `model` in its own framework (with optimizer state when compiled) to a `.keras` or `.h5` file,
    atomically; holds included, so that they keep working in further training."""
    return front_end_of(model).save(model, path)
