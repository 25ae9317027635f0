"""The mask manifest: an ordered list of hold entries (layer, variable, index, mode, value), JSON round-trip.

Entries apply in order, so a later entry overrides an earlier one where they overlap. Freeze values are
stored resolved (the exact float32 values), so a manifest re-applied to a fresh model holds the same numbers.
"""

import base64
import json
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

import numpy as np

from fpgaprune.errors import ManifestError
from fpgaprune.selection import index_to_mask, parse_index, parse_selector
from fpgaprune.support.atomic import write_text_atomic

PRUNE, FREEZE = "prune", "freeze"
MODES = (PRUNE, FREEZE)
_KEYS = {"layer", "variable", "index", "where", "mode", "value"}


@dataclass(frozen=True)
class HoldEntry:
    """One held selection. `variable` None = the layer's default weight; `value` None = prune, or freeze-as-is."""

    layer: str
    variable: Optional[str]
    mode: str
    index: Optional[str] = None
    where: Optional[np.ndarray] = field(default=None, compare=False, repr=False)
    value: object = field(default=None, compare=False, repr=False)

    @property
    def selection(self) -> str:
        return str(parse_selector(self.path + (self.index or ""), where=self.where))

    @property
    def path(self) -> str:
        """`layer` or `layer/variable`."""
        return self.layer if self.variable is None else f"{self.layer}/{self.variable}"

    def mask(self, shape: tuple) -> np.ndarray:
        """Boolean mask of the selected entries in a variable of `shape`."""
        if self.where is not None:
            return np.asarray(self.where, dtype=bool).reshape(shape)
        if self.index is not None:
            return index_to_mask(parse_index(self.index), shape)
        return np.ones(shape, dtype=bool)

    def targets(self, selected: np.ndarray) -> np.ndarray:
        """The float32 values held at the selected positions (C order)."""
        count = int(selected.sum())
        if self.mode == PRUNE:
            return np.zeros(count, np.float32)
        if self.value is None:
            raise ManifestError(f"freeze entry '{self.selection}' has no resolved value")
        value = np.asarray(self.value, np.float32)
        if value.ndim == 0:
            return np.full(count, value, np.float32)
        if value.shape == selected.shape:
            return value[selected]
        if value.shape == (count,):
            return value
        raise ManifestError(
            f"freeze entry '{self.selection}': value of shape {value.shape} fits neither the variable "
            f"{selected.shape} nor the {count} selected entries"
        )

    def to_json(self) -> dict:
        data = {"layer": self.layer, "variable": self.variable}
        if self.index is not None:
            data["index"] = self.index
        if self.where is not None:
            data["where"] = _pack_bits(np.asarray(self.where, bool))
        data["mode"] = self.mode
        if self.mode == FREEZE:
            value = np.asarray(self.value, np.float32)
            data["value"] = float(value) if value.ndim == 0 else [float(v) for v in value.ravel()]
        return data

    @classmethod
    def from_json(cls, data: dict, origin: str = "manifest") -> "HoldEntry":
        if not isinstance(data, dict):
            raise ManifestError(f"{origin}: expected an object with keys layer, variable, index, mode, value")
        unknown = set(data) - _KEYS
        if unknown:
            raise ManifestError(f"{origin}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
        for key in ("layer", "mode"):
            if key not in data:
                raise ManifestError(f"{origin}: missing key '{key}'")
        if data["mode"] not in MODES:
            raise ManifestError(f"{origin}: mode {data['mode']!r} is not one of {MODES}")
        where = _unpack_bits(data["where"], origin) if "where" in data else None
        value = data.get("value")
        if data["mode"] == FREEZE and value is None:
            raise ManifestError(f"{origin}: a freeze entry needs a 'value' (a number or a list)")
        entry = cls(data["layer"], data.get("variable"), data["mode"], data.get("index"), where, value)
        parse_selector(entry.path + (entry.index or ""), where=where)  # validates the layer name and index
        return entry

    def with_value(self, value) -> "HoldEntry":
        return replace(self, value=value)


class MaskManifest:
    """An ordered set of hold entries; build it with `prune()`/`freeze()`, save it, and `hold()` a model with it."""

    def __init__(self, entries=()):
        self.entries: list[HoldEntry] = list(entries)

    def prune(self, selection: str, where: Optional[np.ndarray] = None) -> "MaskManifest":
        """Hold the selected entries at exactly 0.0."""
        return self._add(selection, PRUNE, where, None)

    def freeze(self, selection: str, value=None, where: Optional[np.ndarray] = None) -> "MaskManifest":
        """Hold the selected entries at `value` (a scalar, an array of the variable's shape, or one per entry);
        None freezes them at their values in the model when it is held."""
        return self._add(selection, FREEZE, where, value)

    def _add(self, selection, mode, where, value) -> "MaskManifest":
        selector = parse_selector(selection, where=where)
        self.entries.append(HoldEntry(selector.layer, selector.variable, mode, selector.index, where, value))
        return self

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def to_json(self) -> dict:
        return {"format": "fpgaprune.masks/1", "entries": [entry.to_json() for entry in self.entries]}

    @classmethod
    def from_json(cls, data, origin: str = "manifest") -> "MaskManifest":
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            raise ManifestError(f"{origin}: expected an object with an 'entries' list")
        return cls(HoldEntry.from_json(item, f"{origin}: entry {i}") for i, item in enumerate(data["entries"]))

    def save(self, path) -> Path:
        """Write the manifest as JSON, atomically."""
        return write_text_atomic(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path) -> "MaskManifest":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ManifestError(f"{path}: no such mask manifest") from None
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        return cls.from_json(data, origin=str(path))


def compile_entries(entries, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The combined (mask, target) of entries on one variable; later entries win where they overlap."""
    mask = np.zeros(shape, dtype=bool)
    target = np.zeros(shape, dtype=np.float32)
    for entry in entries:
        selected = entry.mask(shape)
        mask |= selected
        target[selected] = entry.targets(selected)
    return mask, target


def _pack_bits(mask: np.ndarray) -> dict:
    packed = zlib.compress(np.packbits(mask.ravel()).tobytes(), 9)
    return {"shape": list(mask.shape), "bits": base64.b64encode(packed).decode("ascii")}


def _unpack_bits(data, origin: str) -> np.ndarray:
    try:
        shape = tuple(int(n) for n in data["shape"])
        raw = zlib.decompress(base64.b64decode(data["bits"]))
        bits = np.unpackbits(np.frombuffer(raw, np.uint8))[: int(np.prod(shape))]
        return bits.astype(bool).reshape(shape)
    except (KeyError, TypeError, ValueError, zlib.error) as exc:
        raise ManifestError(f"{origin}: 'where' must be {{shape, bits}} as written by fpgaprune ({exc})") from None
