"""PyTorch model files that run no code when read: a state dict, read with `torch.load(weights_only=True)`,
and an architecture the user names (`models.py:DigitsCNN` or `package.module:DigitsCNN`, with keyword
`arguments`), imported only with the trust flag (`--trust-model-code`, `trust_code=True`): importing it runs
its code.

Chosen over the alternatives: a pickled module runs code when loaded; `torch.export`'s `.pt2` keeps a graph of
aten operations, not the modules (Conv2d, Linear) that holds, selections and hls4ml's converter read; TorchScript
drops the Python modules too. A state dict is what PyTorch users save anyway.

A whole pickled module (`torch.save(model)`) is read with the trust flag only, by `torch.load(weights_only=False)`
(the user has accepted running code); its classes must be importable as the pickle names them, or be the class of
the architecture the user names (a module pickled from a script names `__main__`).

fpgaprune's own file (`fp.save_model`, a run's stage files) is one `.pt` that `weights_only` reads: the state
dict and a record of how to rebuild the module around it (its architecture and arguments, or the pickled module
it was read from with the classes it was built from; its holds, the quantization that made its Brevitas twin,
and one sample's input shape).
"""

import importlib
import importlib.util
import io
import os
import pickle
import sys
import zipfile
from pathlib import Path

import torch
from torch import nn

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.frontends.torch.layers import INPUT_SHAPE, QUANTIZATION
from fpgaprune.masking import MaskManifest, hold, manifest_of
from fpgaprune.support.atomic import atomic_target

FORMATS = (".pt", ".pth")
FORMAT = "fpgaprune-torch/1"
ARCHITECTURE = "fpgaprune_architecture"  # on a module fpgaprune built: {"module": "...:Class", "arguments": {...}}
TRUST_HINT = "pass --trust-model-code (trust_code=True in Python) only for code you trust"


def architecture_class(reference: str, trust_code: bool) -> type:
    """The nn.Module class `reference` names (`models.py:Net`, `package.module:Net`), imported if trusted."""
    where, _, name = str(reference).rpartition(":")
    if not where or not name.isidentifier():
        raise ModelFileError(
            f"{reference}: expected an architecture as 'models.py:ClassName' or 'package.module:ClassName'"
        )
    if not trust_code:
        raise ModelFileError(f"{reference}: importing a PyTorch architecture runs its code; {TRUST_HINT}")
    try:
        module = _import(where)
    except Exception as error:  # noqa: BLE001 - the user's module may raise anything while importing
        raise ModelFileError(
            f"{reference}: cannot import {where} ({type(error).__name__}: {first_line(error)})"
        ) from None
    cls = getattr(module, name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ModelFileError(f"{reference}: {where} has no nn.Module class {name!r}")
    return cls


def _import(where: str):
    if not where.endswith(".py"):
        return importlib.import_module(where)
    path = Path(where).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file {where}")
    key = f"fpgaprune_architecture_{abs(hash(str(path)))}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def build(reference: str, arguments: dict | None = None, trust_code: bool = False):
    """A new module of the named architecture, which remembers how it was built (for its files)."""
    cls = architecture_class(reference, trust_code)
    try:
        model = cls(**dict(arguments or {}))
    except Exception as error:  # noqa: BLE001
        raise ModelFileError(
            f"{reference}: {cls.__name__}(**{dict(arguments or {})}) failed ({first_line(error)})"
        ) from None
    setattr(model, ARCHITECTURE, {"module": str(reference), "arguments": dict(arguments or {})})
    return model


def _read(path: Path, trust_code: bool = False, architecture: str | None = None):
    """What the file holds: read with `weights_only`, or (trusted) as a whole pickled module."""
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if path.suffix not in FORMATS:
        raise ModelFileError(f"{path}: PyTorch model files must end in {' or '.join(FORMATS)} (a state dict)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises assorted errors for damaged or code-carrying files
        if trust_code and _torch_pickle(path):  # torch.save's archive, or an old torch's plain pickle
            return unpickled(path.read_bytes(), architecture, str(path))
        why = _why(path, error)
        hint = "" if trust_code else f"; a whole pickled module (torch.save(model)) runs code when read: {TRUST_HINT}"
        raise ModelFileError(
            f"{path}: not a state dict that torch.load(weights_only=True) reads ({why}); save "
            f"model.state_dict(), not the module{hint}"
        ) from None


def unpickled(data: bytes, architecture: str | None, where: str):
    """A whole pickled module, read by running its pickle (trusted), remembering how to read it again: its classes
    as the pickle names them, or the named architecture's class for a name the pickle cannot find
    (`__main__.Net`)."""
    fallback = architecture_class(architecture, True) if architecture else None
    classes = set()

    class Unpickler(pickle.Unpickler):
        def find_class(self, module_name, name):
            try:
                found = super().find_class(module_name, name)
            except (AttributeError, ImportError):
                if fallback is None or name != fallback.__name__:
                    raise ModelFileError(
                        f"{where}: the pickled module names class {module_name}.{name}, which cannot be imported "
                        "here; put its file on the path, or name it as model.module ('models.py:ClassName')"
                    ) from None
                found = fallback
            if isinstance(found, type) and issubclass(found, nn.Module):
                classes.add(f"{module_name}.{name}")
            return found

    pickle_module = type(sys)("fpgaprune_unpickler")
    pickle_module.__dict__.update(vars(pickle), Unpickler=Unpickler)
    try:
        model = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False, pickle_module=pickle_module)
    except ModelFileError:
        raise
    except Exception as error:  # noqa: BLE001 - unpickling runs the file's code, which may raise anything
        raise ModelFileError(f"{where}: cannot read the pickled module ({type(error).__name__}: {first_line(error)})")
    if not isinstance(model, nn.Module):
        raise ModelFileError(f"{where}: holds no state dict and no module (a {type(model).__name__})")
    setattr(model, ARCHITECTURE, {"pickled": data, "classes": sorted(classes), "module": architecture})
    return model


def _torch_pickle(path: Path) -> bool:
    """Whether torch.save wrote the file: its archive (a data.pkl inside), or an old torch's plain pickle."""
    if not zipfile.is_zipfile(path):
        with path.open("rb") as handle:
            return handle.read(1) == b"\x80"  # a pickle's PROTO opcode
    with zipfile.ZipFile(path) as archive:
        return any(name.endswith("/data.pkl") for name in archive.namelist())


def _why(path: Path, error: Exception) -> str:
    """What torch's error means, where its own words say little (a Keras archive, a file torch did not write)."""
    if not zipfile.is_zipfile(path):
        return f"not an archive torch.save wrote: {first_line(error)}"
    with zipfile.ZipFile(path) as archive:
        if not any(name.endswith("/data.pkl") for name in archive.namelist()):
            return "a zip archive without torch.save's data.pkl (a Keras .keras file ends in .keras)"
    return first_line(error)


def load_model(path, architecture: str | None = None, arguments: dict | None = None, trust_code: bool = False):
    """The module of `architecture` with the state dict in `path` (or fpgaprune's own file, which names its
    architecture, holds and quantization; or, trusted, a whole pickled module). Any failure is one
    ModelFileError line."""
    path = Path(path)
    data = _read(path, trust_code, architecture)
    if isinstance(data, nn.Module):
        return data.eval()
    record = data.get("fpgaprune") if isinstance(data, dict) and isinstance(data.get("fpgaprune"), dict) else None
    state = data["state_dict"] if record is not None else data
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelFileError(
            f"{path}: holds no state dict (a dict of tensors, model.state_dict()) and no module "
            f"(a {type(state).__name__})"
        )
    model = _rebuilt(_base_module(path, record or {}, architecture, arguments, trust_code), record or {}, path)
    _load_state(model, state, path)
    if (record or {}).get("input_shape"):
        model.__dict__[INPUT_SHAPE] = tuple(int(d) for d in record["input_shape"])
    return model.eval()


def _base_module(path: Path, record: dict, architecture, arguments, trust_code: bool):
    """The module the file's state dict fits, before holds and quantization: built from its architecture, or
    read from the pickled module fpgaprune's file keeps (trusted)."""
    pickled = record.get("pickled_module")
    if pickled is not None and architecture is None:
        if not trust_code:
            classes = ", ".join(record.get("classes", [])[:3])
            raise ModelFileError(f"{path}: keeps a pickled module ({classes}), which runs code when read; {TRUST_HINT}")
        return unpickled(pickled, record.get("architecture"), str(path))
    reference = architecture or record.get("architecture")
    if reference is None:
        raise ModelFileError(f"{path}: a state dict needs its architecture (model.module: 'models.py:ClassName')")
    return build(reference, arguments if arguments is not None else record.get("arguments"), trust_code)


def _rebuilt(model, record: dict, path: Path):
    """The module as the file's record says it was: quantized (its Brevitas twin), then held."""
    from fpgaprune.frontends.torch.quantize import quantized_twin

    quantization = record.get("quantization")
    if quantization:
        model = quantized_twin(model, quantization["spec"], quantization.get("batchnorm", "fold"))
    holds = MaskManifest.from_json(record["holds"], str(path)) if record.get("holds") else None
    return hold(model, holds) if holds is not None and len(holds) else model


def _load_state(model, state: dict, path: Path) -> None:
    fits = f"{path}: its state dict does not fit {type(model).__name__}"
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as error:  # a shape that differs: torch lists each, one per line
        found = [line.strip() for line in str(error).splitlines() if "size mismatch" in line]
        raise ModelFileError(
            f"{fits} ({found[0] if found else first_line(error)}); check model.module and model.arguments"
        ) from None
    missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if missing or unexpected:
        first = f"missing {missing[0]!r}" if missing else f"unexpected {unexpected[0]!r}"
        raise ModelFileError(
            f"{fits} ({len(missing)} keys missing, {len(unexpected)} unexpected; {first}); check model.module and "
            "model.arguments"
        )


def save_model(model, path) -> Path:
    """fpgaprune's PyTorch file of `model`, written atomically: its state dict and how to rebuild it."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise ModelFileError(f"{path}: PyTorch model files must end in {' or '.join(FORMATS)}")
    built = getattr(model, ARCHITECTURE, None)
    if built is None:
        raise ModelFileError(
            f"{path}: a PyTorch model file names the architecture that rebuilds the module; load it with "
            "fp.load_model(..., architecture='models.py:ClassName'), or save model.state_dict() yourself"
        )
    quantization = getattr(model, QUANTIZATION, None)
    record = {"format": FORMAT, "architecture": built.get("module"), "arguments": built.get("arguments")}
    if "pickled" in built:  # read from a whole pickled module: the pickle itself, and what it names
        record.update(pickled_module=built["pickled"], classes=built["classes"])
    shape = getattr(model, INPUT_SHAPE, None)
    record.update(holds=manifest_of(model).to_json(), quantization=quantization)
    record.update(input_shape=list(shape) if shape is not None else None)
    tmp, final = atomic_target(path)
    try:
        torch.save({"fpgaprune": record, "state_dict": model.state_dict()}, tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final
