"""`fp.load_model` and `fp.save_model`: a model file read by the front end of the framework that wrote it, after its
configs were checked (`model_files`), or a JSON architecture and its HDF5 weights (`model_json`)."""

from pathlib import Path

from fpgaprune.errors import ModelFileError
from fpgaprune.framework import architecture_builder, front_end_of_file
from fpgaprune.model.files import OTHER_FRAMEWORKS, keras_major
from fpgaprune.model.keras_json import load_json_model
from fpgaprune.record import Bound, resolved


def _front_end_of_file(path):
    """The front end that reads the model file (`framework.front_end_of_file`); one line where none does."""
    front_end = front_end_of_file(path, _keras_major)
    if front_end is None:
        major = _keras_major(path)
        raise ModelFileError(f"{path}: a Keras {major} model file, and no installed front end reads Keras {major}")
    return front_end


def _keras_major(path) -> int:
    """The Keras major version that wrote the file; one line naming the framework of another's file."""
    suffix = Path(path).suffix
    if suffix in OTHER_FRAMEWORKS:
        raise ModelFileError(f"{path}: {OTHER_FRAMEWORKS[suffix]}")
    return keras_major(path)


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
    return load_bound(
        path, compile, trust_code, json=json, weights=weights, architecture=architecture, arguments=arguments
    ).model


def load_bound(
    path=None,
    compile: bool = True,
    trust_code: bool = False,
    *,
    json=None,
    weights=None,
    architecture=None,
    arguments=None,
) -> Bound:
    """`load_model`'s model bound to the front end that read it (`record.Bound`): nothing is looked up again."""
    if json is not None or weights is not None:
        if path is not None:
            raise ModelFileError(f"{path}: give a model file, or an architecture (json=) and its weights, not both")
        if json is None:
            raise ModelFileError(f"{weights}: weights need their architecture (json=..., model.json in YAML)")
        return load_json_model(json, weights, trust_code=trust_code)
    if path is None and architecture is not None:  # a PyTorch architecture with no state dict: newly built
        builder = architecture_builder()
        if builder is None:
            raise ModelFileError(f"{architecture}: a PyTorch architecture; {OTHER_FRAMEWORKS['.pt'].split(': ', 1)[1]}")
        return Bound(builder.build(architecture, arguments, trust_code), builder)
    if path is None:
        raise ModelFileError("no model given: a .keras/.h5 file, or an architecture (json=) and its weights")
    front_end = _front_end_of_file(path)
    if architecture is not None or arguments is not None:
        if "architectures" not in front_end.reads:
            raise ModelFileError(f"{path}: a Keras model file names its own architecture; give no architecture=")
        model = front_end.load(path, trust_code=trust_code, architecture=architecture, arguments=arguments)
    else:
        model = front_end.load(path, trust_code=trust_code, compile=compile)
    return Bound(model, front_end)


def save_model(model, path) -> Path:
    """Save `model` in its own framework (with optimizer state when compiled) to a `.keras` or `.h5` file,
    atomically; holds included, so that they keep working in further training."""
    bound = resolved(model)
    return bound.front.save(bound.model, path)
