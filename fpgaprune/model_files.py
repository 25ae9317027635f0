"""Read a user's `.keras`/`.h5` model file without running code from it.

Before anything is deserialized, the whole model config (nested models, wrappers and RNN cells included) is
walked against an allow-list of classes and modules. `Lambda` layers carry marshalled Python bytecode and
`TFOpLambda`/`SlicingOpLambda` call arbitrary TensorFlow ops, so they are refused unless the caller opts in
with `trust_code=True`. tf_keras' `safe_mode` is kept on as a second layer.
"""

import json
import zipfile
from functools import lru_cache
from pathlib import Path

from fpgaprune.errors import ModelFileError, first_line

FORMATS = (".keras", ".h5")
CODE_LAYERS = frozenset({"Lambda", "TFOpLambda", "SlicingOpLambda"})
ALLOWED_MODULES = ("keras", "tf_keras", "qkeras", "fpgaprune", "builtins", "numpy")
VALUE_MARKERS = frozenset({"__tuple__", "__numpy__", "__tensor__", "__bytes__", "__typespec__", "function"})
TRUST_HINT = "pass --trust-model-code (trust_code=True in Python) only for a file you trust"
MAX_CONFIG_BYTES = 64 << 20  # a model config is kilobytes, a few MB for a very wide functional model
MAX_INFLATION = 50  # Keras stores a .keras archive uncompressed; members inflating more than this are a zip bomb
MAX_DEPTH = 200  # levels of JSON nesting; a model config has about 10, nested models and wrappers a few more


@lru_cache(maxsize=1)
def allowed_classes() -> frozenset:
    """Class names a model config may name: tf_keras' and QKeras' layers and objects, and fpgaprune's."""
    from fpgaprune.tfk import keras, qkeras_objects

    names = {"Functional", "Sequential", "Model", "HoldConstraint", "fpgaprune>HoldConstraint"}
    for module in (keras.layers, keras.initializers, keras.regularizers, keras.constraints, keras.optimizers,
                   keras.losses, keras.metrics, keras.optimizers.schedules):
        names.update(name for name, value in vars(module).items() if isinstance(value, type))
    names.update(qkeras_objects())
    return frozenset(names - CODE_LAYERS)


def read_model_config(path: Path) -> tuple[dict, list]:
    """The model config of an `.h5` or `.keras` file, and its other configs (training, compile), as dicts."""
    if path.suffix == ".h5":
        return _h5_configs(path)
    return _keras_configs(path)


def _h5_configs(path: Path) -> tuple[dict, list]:
    import h5py

    if not h5py.is_hdf5(path):
        raise ModelFileError(f"{path}: not an HDF5 file (a .h5 model is written by model.save('model.h5'))")
    try:
        with h5py.File(path, "r") as handle:  # attributes are stored uncompressed: no bomb, at most the file's size
            raw = handle.attrs.get("model_config")
            extra = [handle.attrs[key] for key in ("training_config",) if key in handle.attrs]
    except OSError as error:
        raise ModelFileError(f"{path}: unreadable HDF5 file ({first_line(error)})") from None
    if raw is None:
        raise ModelFileError(f"{path}: holds no model config (a weights-only file?); save the whole model")
    return _json(path, raw, "model_config"), [_json(path, text, "training_config") for text in extra]


def _keras_configs(path: Path) -> tuple[dict, list]:
    if not zipfile.is_zipfile(path):
        raise ModelFileError(f"{path}: not a .keras archive (a zip file written by model.save('model.keras'))")
    try:
        with zipfile.ZipFile(path) as archive:
            if "config.json" not in archive.namelist():
                raise ModelFileError(f"{path}: the .keras archive has no config.json")
            _check_size(path, "config.json", archive.getinfo("config.json").file_size)
            _check_inflation(path, sum(member.file_size for member in archive.infolist()))
            with archive.open("config.json") as member:  # zipfile stops at the declared size
                raw = member.read()
    except (zipfile.BadZipFile, OSError) as error:
        raise ModelFileError(f"{path}: unreadable .keras archive ({first_line(error)})") from None
    config = _json(path, raw, "config.json")
    return config, [config.pop("compile_config")] if isinstance(config.get("compile_config"), dict) else []


def _check_size(path: Path, what: str, size: int) -> None:
    """Refuse a config too large to be one before reading it (a zip bomb would take the machine's memory)."""
    if size > MAX_CONFIG_BYTES:
        raise ModelFileError(f"{path}: {what} is {size / 2**20:,.0f} MiB, over the {MAX_CONFIG_BYTES >> 20} MiB a "
                             "model config can take (a damaged or hostile file?); refused before reading it")


def _check_inflation(path: Path, inflated: int) -> None:
    """Refuse an archive whose members inflate far past its size on disk (the weights are read from it later)."""
    stored = path.stat().st_size
    if inflated > MAX_INFLATION * stored + MAX_CONFIG_BYTES:
        raise ModelFileError(f"{path}: the archive inflates to {inflated / 2**20:,.0f} MiB from "
                             f"{stored / 2**20:,.1f} MiB on disk (over {MAX_INFLATION}x; Keras stores it "
                             "uncompressed: a zip bomb?); refused")


def _json(path: Path, raw, what: str):
    try:
        value = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelFileError(f"{path}: {what} is not valid JSON ({first_line(error)})") from None
    except RecursionError:
        raise ModelFileError(f"{path}: {what} nests too deep to parse (a model config nests about 10 levels; a "
                             "damaged or hostile file?)") from None
    if not isinstance(value, dict):
        raise ModelFileError(f"{path}: {what} is a {type(value).__name__}, expected a JSON object")
    return value


def check_model_config(path: Path, config, trust_code: bool = False) -> None:
    """Raise a one-line ModelFileError at the first object outside the allow-list (layer name included)."""
    for node, layer in _objects(path, config):
        class_name = node.get("class_name")
        module = node.get("module")
        if class_name in CODE_LAYERS:
            if trust_code:
                continue
            raise ModelFileError(f"{path}: layer {layer!r} is a {class_name}, which runs Python code when loaded; "
                                 f"refused ({TRUST_HINT})")
        if isinstance(module, str) and module.split(".")[0] not in ALLOWED_MODULES and not trust_code:
            raise ModelFileError(f"{path}: layer {layer!r} names module {module!r}, which loading would import; "
                                 f"only {', '.join(ALLOWED_MODULES)} are allowed ({TRUST_HINT})")
        if not isinstance(class_name, str):
            raise ModelFileError(f"{path}: layer {layer!r} has a class_name of type {type(class_name).__name__}")
        plain = class_name.removeprefix("Custom>")  # tf_keras registers its optimizers as "Custom>Adam"
        if plain not in allowed_classes() and plain not in VALUE_MARKERS and not trust_code:
            raise ModelFileError(f"{path}: layer {layer!r} is of class {class_name!r}, which is not a tf_keras, "
                                 f"QKeras or fpgaprune class; refused ({TRUST_HINT})")


def _objects(path: Path, config):
    """Every serialized object (a dict with a class_name) in `config`, depth first, with the name of the layer it
    belongs to. Walked with a stack: a config nested past MAX_DEPTH is refused, not a RecursionError."""
    stack = [(config, None, 0)]
    while stack:
        value, layer, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelFileError(f"{path}: the model config nests deeper than {MAX_DEPTH} levels (a model config "
                                 "nests about 10; a damaged or hostile file?)")
        if isinstance(value, dict):
            if "class_name" in value:
                layer = _layer_name(value) or layer
                yield value, layer or value.get("class_name")
            items = list(value.values())
        else:
            items = value if isinstance(value, list) else []
        stack.extend((item, layer, depth + 1) for item in reversed(items))


def _layer_name(node: dict):
    """The layer name of a serialized layer or model (its config has a name and trainable/layers), else None."""
    config = node.get("config")
    if isinstance(config, dict) and isinstance(config.get("name"), str) and (
            "trainable" in config or "layers" in config):
        return config["name"]
    return None


def check_model_file(path, trust_code: bool = False) -> Path:
    """Check that `path` is a model file whose configs name only allowed classes; return it as a Path."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if path.is_dir():
        raise ModelFileError(f"{path}: is a directory; expected a .keras or .h5 model file")
    if path.suffix not in FORMATS:
        raise ModelFileError(f"{path}: model files must end in {' or '.join(FORMATS)}")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path}: the file is empty")
    config, others = read_model_config(path)
    for item in (config, *others):
        check_model_config(path, item, trust_code)
    return path

