"""The sweep grid: axes of values, each point an ordinary run config.

Named axes: `sparsity` (every layer of `pruning.targets`), `bits` (the width of the kernel and activation
quantizers), `structure`, `budget_lut` and `budget_dsp` (a budget replaces the targets). Any other axis is a
dotted config path, e.g. `quantization.qat_epochs=1,3`.
"""

import copy
import itertools
from dataclasses import dataclass

import yaml

from fpgaprune.errors import FpgapruneError
from fpgaprune.framework import library_front_end
from fpgaprune.quantize.spec import DEFAULT_QUANTIZERS, with_width

NAMED_AXES = ("sparsity", "bits", "structure", "budget_lut", "budget_dsp")


class SweepError(FpgapruneError):
    """A grid that names no axis, a bad value, or a point whose config does not validate."""


@dataclass(frozen=True)
class Point:
    values: tuple  # ((axis, value), ...), axes sorted

    @property
    def name(self) -> str:
        """The point's directory name, e.g. `bits=6,sparsity=0.5`."""
        return ",".join(f"{axis.split('.')[-1]}={value}" for axis, value in self.values)

    def as_dict(self) -> dict:
        return dict(self.values)


def parse_grid(items) -> dict:
    """`["sparsity=0.3,0.5", "bits=4,6"]` (or a dict of lists, from YAML) as {axis: [values]}."""
    if isinstance(items, dict):
        grid = {
            str(axis): list(values) if isinstance(values, (list, tuple)) else [values] for axis, values in items.items()
        }
    else:
        grid = {}
        for item in items:
            axis, equals, values = str(item).partition("=")
            if not equals or not axis.strip() or not values.strip():
                raise SweepError(
                    f"--grid {item!r}: expected AXIS=V1,V2,... (axes: {', '.join(NAMED_AXES)} or a dotted config key)"
                )
            grid[axis.strip()] = [yaml.safe_load(v.strip()) for v in values.split(",")]
    for axis, values in grid.items():
        if not values or len(set(map(repr, values))) != len(values):
            raise SweepError(f"sweep axis {axis!r}: found {values}; expected distinct values")
    if not grid:
        raise SweepError("the sweep has no axis; give --grid AXIS=V1,V2 or a sweep.grid section")
    if "sparsity" in grid and {"budget_lut", "budget_dsp"} & set(grid):
        raise SweepError(
            "sweep axes 'sparsity' and 'budget_*' exclude each other (targets or a budget); "
            "sweep each in its own output directory"
        )
    return grid


def points(grid: dict) -> list:
    axes = sorted(grid)
    return [Point(tuple(zip(axes, combination))) for combination in itertools.product(*(grid[a] for a in axes))]


def _set(config: dict, dotted: str, value) -> None:
    *parents, leaf = dotted.split(".")
    node = config
    for part in parents:
        if not isinstance(node.get(part, {}), dict):
            raise SweepError(f"sweep axis {dotted!r}: {part!r} is not a config section")
        node = node.setdefault(part, {})
    node[leaf] = value


def _checked_bits(bits, axis: str) -> int:
    if not isinstance(bits, int) or isinstance(bits, bool) or bits < 2:
        raise SweepError(f"sweep axis {axis!r}: found {bits!r}; expected a width of at least 2 bits")
    return bits


def _library(config: dict) -> str:
    """The point's quantizer library ("qkeras" or "hgq2"), `auto` resolved in this environment."""
    library = (config.get("quantization") or {}).get("library", "auto")
    if library != "auto":
        return library
    try:
        return library_front_end().library_key
    except FpgapruneError:  # no quantizer library here: the run's validation says so
        return "qkeras"


def _width(text: str, bits, axis: str) -> str:
    changed = with_width(text, _checked_bits(bits, axis))
    if changed is None:
        raise SweepError(f"sweep axis {axis!r}: cannot set the width of {text!r}")
    return changed


def point_config(base: dict, point: Point) -> dict:
    """The run config of one point: `base` (a parsed run config as a dict) with the point's values set."""
    config = copy.deepcopy(base)
    config.pop("sweep", None)
    pruning = config.setdefault("pruning", {})
    for axis, value in point.values:
        if axis == "sparsity":
            if not pruning.get("targets"):
                raise SweepError("sweep axis 'sparsity' sets every layer of pruning.targets; the config names none")
            pruning["targets"] = {layer: value for layer in pruning["targets"]}
            pruning["budget"] = {}
        elif axis == "bits" and _library(config) == "hgq2":  # HGQ2's initial widths: weights, activations
            hgq2 = config.setdefault("quantization", {}).setdefault("hgq2", {})
            hgq2["weight_bits"] = hgq2["activation_bits"] = _checked_bits(value, axis)
        elif axis == "bits":
            quantization = config.setdefault("quantization", {})
            default = quantization["default"] = dict(quantization.get("default") or DEFAULT_QUANTIZERS)
            for role in ("kernel", "activation"):
                if role in default:
                    default[role] = _width(default[role], value, axis)
        elif axis in ("budget_lut", "budget_dsp"):
            pruning.setdefault("budget", {})[axis.split("_")[1].upper()] = value
            pruning["targets"] = {}
        elif axis == "structure":
            pruning["structure"] = value
        else:
            _set(config, axis, value)
    return config
