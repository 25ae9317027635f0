"""A model kept as a JSON architecture plus HDF5 weights (hls4ml's `KerasJson` + `KerasH5`), as many published
Keras 2.0-2.4 and QKeras models are.

The JSON is what `model.to_json()` writes: `{"class_name": "Sequential", "config": {...}, "keras_version":
"2.4.0", ...}`. Its Keras version picks the front end (none written: Keras 2), and the whole config is walked
against that front end's allow-list before anything is deserialized, as for a model file (`model_files`): no code
runs unless the caller trusts it. The weights are read from HDF5 (a weights file, or a whole-model `.h5`) into the
model built from the JSON; they must fit it layer by layer.
"""

from pathlib import Path

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.framework import front_end_of_file
from fpgaprune.model.files import MAX_CONFIG_BYTES, parse_json
from fpgaprune.record import Bound

WEIGHT_FORMATS = (".h5", ".hdf5")


def check_json_file(path) -> Path:
    """`path` as a Path, if it names a readable, non-empty `.json` file no larger than a model config can be."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"{path}: no such architecture file (model.json: a model's to_json())")
    if path.suffix != ".json":
        raise ModelFileError(f"{path}: an architecture file must end in .json (model.to_json() written to a file)")
    size = path.stat().st_size
    if size == 0 or size > MAX_CONFIG_BYTES:
        raise ModelFileError(
            f"{path}: the file is {'empty' if size == 0 else f'{size >> 20} MiB'}; an architecture is a JSON "
            f"object of at most {MAX_CONFIG_BYTES >> 20} MiB"
        )
    return path


def check_weights_file(path) -> Path:
    """`path` as a Path, if it names an HDF5 file."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"{path}: no such weights file")
    if path.suffix not in WEIGHT_FORMATS or not h5py.is_hdf5(path):
        raise ModelFileError(f"{path}: not an HDF5 weights file (model.save_weights('weights.h5'))")
    return path


def read_architecture(path) -> dict:
    """The model config of a `.json` architecture file, checked to be a serialized Keras model."""
    path = check_json_file(path)
    config = parse_json(path, path.read_bytes(), "the architecture")
    if not isinstance(config.get("config"), dict) or not isinstance(config.get("class_name"), str):
        raise ModelFileError(
            f"{path}: not a Keras model's JSON (expected {{'class_name': 'Sequential' or 'Model', 'config': ...}}, "
            f"as model.to_json() writes)"
        )
    return config


def keras_major_of(path: Path, config: dict) -> int:
    """The Keras major version that wrote the architecture (its `keras_version`; 2 when it names none)."""
    version = config.get("keras_version")
    try:
        return int(str(version).split(".")[0]) if version else 2
    except ValueError:
        raise ModelFileError(f"{path}: names Keras version {version!r}; expected 2.x or 3.x") from None


def load_json_model(json_path, weights_path, trust_code: bool = False):
    """The model of `json_path` with the weights of `weights_path`, in the framework that wrote it, bound to its
    front end (one ModelFileError line on any failure)."""
    if weights_path is None:
        raise ModelFileError(f"{json_path}: an architecture needs its weights (weights=..., model.weights in YAML)")
    config, weights = read_architecture(json_path), check_weights_file(weights_path)
    path, major = Path(json_path), keras_major_of(Path(json_path), config)
    front_end = front_end_of_file(path, lambda _: major)
    if front_end is None:
        raise ModelFileError(f"{path}: a Keras {major} architecture, and no installed front end reads Keras {major}")
    return Bound(front_end.load(path, trust_code=trust_code, weights=weights), front_end)


def built_from_json(keras, text: str, objects: dict, path: Path, weights: Path):
    """`keras.models.model_from_json(text)` with `weights` loaded into it; the framework's errors as one line."""
    try:
        model = keras.models.model_from_json(text, custom_objects=objects)
    except Exception as error:  # noqa: BLE001 - Keras raises many types for a config it cannot build
        raise ModelFileError(
            f"{path}: could not build the model ({type(error).__name__}: {first_line(error)})"
        ) from None
    try:
        model.load_weights(weights)
    except Exception as error:  # noqa: BLE001 - a count or shape that does not fit, a damaged file
        raise ModelFileError(
            f"{weights}: its weights do not fit the architecture of {path} ({type(error).__name__}: "
            f"{first_line(error)})"
        ) from None
    return model
