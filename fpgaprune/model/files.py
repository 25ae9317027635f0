"""Read a user's `.keras`/`.h5` model file without running code from it, and pick the front end that loads it.

A file's framework comes from its metadata (`keras_version` 2.x: tf_keras, 3.x: Keras 3; tf_keras writes
`.keras` files too, whose configs name `keras.layers` as Keras 3's do). Before anything is deserialized, the
whole model config (nested models, wrappers and RNN cells included) is walked against that front end's
allow-list (`FilePolicy`) of classes, modules and markers. Layers that carry code (`Lambda`'s marshalled
bytecode, `TFOpLambda`'s TensorFlow calls, Keras 3's `__lambda__`) are refused; for tf_keras files the caller may
opt in with `trust_code=True`. The framework's own safe mode is kept on as a second layer.
"""

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fpgaprune.errors import ModelFileError, first_line

FORMATS = (".keras", ".h5")
# every model file fpgaprune reads, as its messages name them
READABLE = ".keras or .h5 (Keras), or .pt or .pth (a PyTorch state dict, its class named by model.module)"
# Files of a framework whose front end is not installed: the install that reads them
OTHER_FRAMEWORKS = {
    suffix: "a PyTorch state dict; the PyTorch front end reads it: "
    "pip install torch==2.13.0 && pip install -e '.[torch]'"
    for suffix in (".pt", ".pth")
}
TRUST_HINT = "pass --trust-model-code (trust_code=True in Python) only for a file you trust"
MAX_CONFIG_BYTES = 64 << 20  # a model config is kilobytes, a few MB for a very wide functional model
MAX_INFLATION = 50  # Keras stores a .keras archive uncompressed; members inflating more than this are a zip bomb
MAX_DEPTH = 200  # levels of JSON nesting; a model config has about 10, nested models and wrappers a few more


@dataclass(frozen=True)
class FilePolicy:
    """What a front end's model files may name: checked before anything is deserialized."""

    framework: str  # "tf_keras, QKeras", "Keras 3": named in the refusal
    classes: Callable[[], frozenset]  # the class names it may name (besides `markers`)
    modules: tuple  # the top-level packages a `module` key may name
    code_layers: frozenset  # classes that carry or run code
    markers: frozenset  # class_name values that are data ("__tuple__", "__keras_tensor__")
    code_markers: frozenset = frozenset()  # class_name values that are code ("__lambda__")
    trustable: bool = True  # whether trust_code=True may load code (tf_keras); never for Keras 3
    registered: Callable[[str], bool] = lambda name: True  # whether a `registered_name` is allowed


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
    return parse_json(path, raw, "model_config"), [parse_json(path, text, "training_config") for text in extra]


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
    config = parse_json(path, raw, "config.json")
    return config, [config.pop("compile_config")] if isinstance(config.get("compile_config"), dict) else []


def _check_size(path: Path, what: str, size: int) -> None:
    """Refuse a config too large to be one before reading it (a zip bomb would take the machine's memory)."""
    if size > MAX_CONFIG_BYTES:
        raise ModelFileError(
            f"{path}: {what} is {size / 2**20:,.0f} MiB, over the {MAX_CONFIG_BYTES >> 20} MiB a "
            "model config can take (a damaged or hostile file?); refused before reading it"
        )


def _check_inflation(path: Path, inflated: int) -> None:
    """Refuse an archive whose members inflate far past its size on disk (the weights are read from it later)."""
    stored = path.stat().st_size
    if inflated > MAX_INFLATION * stored + MAX_CONFIG_BYTES:
        raise ModelFileError(
            f"{path}: the archive inflates to {inflated / 2**20:,.0f} MiB from "
            f"{stored / 2**20:,.1f} MiB on disk (over {MAX_INFLATION}x; Keras stores it "
            "uncompressed: a zip bomb?); refused"
        )


def parse_json(path: Path, raw, what: str):
    try:
        value = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ModelFileError(f"{path}: {what} is not valid JSON ({first_line(error)})") from None
    except RecursionError:
        raise ModelFileError(
            f"{path}: {what} nests too deep to parse (a model config nests about 10 levels; a damaged or hostile file?)"
        ) from None
    if not isinstance(value, dict):
        raise ModelFileError(f"{path}: {what} is a {type(value).__name__}, expected a JSON object")
    return value


def check_model_config(path: Path, config, policy: FilePolicy, trust_code: bool = False) -> None:
    """Raise a one-line ModelFileError at the first object outside `policy` (layer name included)."""
    trusted = trust_code and policy.trustable
    hint = f" ({TRUST_HINT})" if policy.trustable else ""
    for node, layer in _objects(path, config):
        class_name, module = node.get("class_name"), node.get("module")
        if not isinstance(class_name, str):
            raise ModelFileError(f"{path}: layer {layer!r} has a class_name of type {type(class_name).__name__}")
        if (class_name in policy.code_layers or class_name in policy.code_markers) and not trusted:
            what = "holds a Python function" if class_name in policy.code_markers else f"is a {class_name}"
            raise ModelFileError(
                f"{path}: layer {layer!r} {what}, which runs Python code when loaded; "
                f"refused{hint or '; build it from Keras layers instead'}"
            )
        if isinstance(module, str) and module.split(".")[0] not in policy.modules and not trusted:
            raise ModelFileError(
                f"{path}: layer {layer!r} names module {module!r}, which loading would import; "
                f"only {', '.join(policy.modules)} are allowed{hint}"
            )
        registered = node.get("registered_name")
        plain = class_name.removeprefix("Custom>")  # tf_keras registers its optimizers as "Custom>Adam"
        known = plain in policy.classes() or plain in policy.markers
        if (not known or (registered and not policy.registered(registered))) and not trusted:
            named = f" (registered as {registered!r})" if registered and registered != class_name else ""
            raise ModelFileError(
                f"{path}: layer {layer!r} is of class {class_name!r}{named}, which is not a "
                f"{policy.framework} or fpgaprune class; refused{hint}"
            )


def _objects(path: Path, config):
    """Every serialized object (a dict with a class_name) in `config`, depth first, with the name of the layer it
    belongs to. Walked with a stack: a config nested past MAX_DEPTH is refused, not a RecursionError."""
    stack = [(config, None, 0)]
    while stack:
        value, layer, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelFileError(
                f"{path}: the model config nests deeper than {MAX_DEPTH} levels (a model config "
                "nests about 10; a damaged or hostile file?)"
            )
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
    if (
        isinstance(config, dict)
        and isinstance(config.get("name"), str)
        and ("trainable" in config or "layers" in config)
    ):
        return config["name"]
    return None


def check_model_file(path) -> Path:
    """`path` as a Path, if it names a non-empty file of a model format."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if path.is_dir():
        raise ModelFileError(f"{path}: is a directory; expected a model file: {READABLE}")
    if path.suffix not in FORMATS:
        raise ModelFileError(f"{path}: model files must end in {READABLE}")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path}: the file is empty")
    return path


def check_model_configs(path: Path, policy: FilePolicy, trust_code: bool = False) -> None:
    """Every config of the file (the model's, its training or compile config) within `policy`."""
    config, others = read_model_config(path)
    for item in (config, *others):
        check_model_config(path, item, policy, trust_code)


def keras_major(path) -> int:
    """The Keras major version that wrote the model file (2: tf_keras, 3: Keras 3), from its metadata; 2 when it
    says none (files from before Keras wrote it)."""
    path = check_model_file(path)
    version = _h5_keras_version(path) if path.suffix == ".h5" else _archive_keras_version(path)
    try:
        return int(str(version).split(".")[0]) if version else 2
    except ValueError:
        raise ModelFileError(f"{path}: its metadata names Keras version {version!r}; expected 2.x or 3.x") from None


def _h5_keras_version(path: Path):
    import h5py

    if not h5py.is_hdf5(path):
        raise ModelFileError(f"{path}: not an HDF5 file (a .h5 model is written by model.save('model.h5'))")
    with h5py.File(path, "r") as handle:
        version = handle.attrs.get("keras_version")
    return version.decode() if isinstance(version, bytes) else version


def _archive_keras_version(path: Path):
    if not zipfile.is_zipfile(path):
        raise ModelFileError(f"{path}: not a .keras archive (a zip file written by model.save('model.keras'))")
    with zipfile.ZipFile(path) as archive:
        if "metadata.json" not in archive.namelist():
            return None
        _check_size(path, "metadata.json", archive.getinfo("metadata.json").file_size)
        with archive.open("metadata.json") as member:
            return parse_json(path, member.read(), "metadata.json").get("keras_version")
