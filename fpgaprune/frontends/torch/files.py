"""PyTorch model files that run no code when read: a state dict, read with `torch.load(weights_only=True)`,
and an architecture the user names (`models.py:DigitsCNN` or `package.module:DigitsCNN`, with keyword
`arguments`), imported only with the trust flag (`--trust-model-code`, `trust_code=True`): importing it runs
its code.

Chosen over the alternatives: a pickled module runs code when loaded; `torch.export`'s `.pt2` keeps a graph of
aten operations, not the modules (Conv2d, Linear) that holds, selections and hls4ml's converter read; TorchScript
drops the Python modules too. A state dict is what PyTorch users save anyway.

fpgaprune's own file (`fp.save_model`, a run's stage files) is one `.pt` that `weights_only` reads: the state
dict and a record of how to rebuild the module around it (its architecture and arguments, its holds, the
quantization that made its Brevitas twin, and one sample's input shape).
"""

import importlib
import importlib.util
import os
import sys
import zipfile
from pathlib import Path

import torch
from torch import nn

from fpgaprune.errors import ModelFileError, first_line
from fpgaprune.frontends.torch.layers import INPUT_SHAPE

FORMATS = (".pt", ".pth")
FORMAT = "fpgaprune-torch/1"
ARCHITECTURE = "fpgaprune_architecture"  # on a module fpgaprune built: {"module": "...:Class", "arguments": {...}}
QUANTIZATION = "fpgaprune_quantization"  # on a quantized twin: {"spec": {...}, "batchnorm": "fold"}
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


def _read(path: Path):
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if path.suffix not in FORMATS:
        raise ModelFileError(f"{path}: PyTorch model files must end in {' or '.join(FORMATS)} (a state dict)")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - torch raises assorted errors for damaged or code-carrying files
        raise ModelFileError(
            f"{path}: not a state dict that torch.load(weights_only=True) reads ({_why(path, error)}); save "
            "model.state_dict(), not the module"
        ) from None


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
    architecture, holds and quantization). Any failure is one ModelFileError line."""
    path = Path(path)
    data = _read(path)
    record = data.get("fpgaprune") if isinstance(data, dict) and isinstance(data.get("fpgaprune"), dict) else None
    state = data["state_dict"] if record is not None else data
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelFileError(f"{path}: holds no state dict (a dict of tensors, model.state_dict())")
    reference = architecture or (record or {}).get("architecture")
    if reference is None:
        raise ModelFileError(f"{path}: a state dict needs its architecture (model.module: 'models.py:ClassName')")
    arguments = arguments if arguments is not None else (record or {}).get("arguments")
    model = _rebuilt(build(reference, arguments, trust_code), record or {}, path)
    _load_state(model, state, path)
    if (record or {}).get("input_shape"):
        model.__dict__[INPUT_SHAPE] = tuple(int(d) for d in record["input_shape"])
    return model.eval()


def _rebuilt(model, record: dict, path: Path):
    """The module as the file's record says it was: quantized (its Brevitas twin), then held."""
    from fpgaprune.frontends.torch.quantize import quantized_twin
    from fpgaprune.masking import MaskManifest, hold

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
    from fpgaprune.atomic import atomic_target
    from fpgaprune.masking import manifest_of

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
    record = {"format": FORMAT, "architecture": built["module"], "arguments": built["arguments"]}
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
