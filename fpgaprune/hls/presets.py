"""hls4ml config presets (`hls_configs/*.yaml`, or a user's own file) in hls4ml's own config format, validated by
the same schema tool as the run config and the boards (`yaml_schema.py`): one line per error, with the file's
line and a "did you mean"."""

import copy
from typing import Literal

from pydantic import PositiveFloat, PositiveInt, field_validator

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.yaml_files import named_file
from fpgaprune.support.yaml_schema import Located, Strict, load_yaml_file, validate_mapping

STRATEGIES = ("latency", "resource", "resource_unrolled", "distributed_arithmetic")
PrecisionSpec = str | dict[str, str]  # one type, or one per variable (weight, bias, result, ...)


def _strategy(value: str | None) -> str | None:
    if value is not None and str(value).lower() not in STRATEGIES:
        raise ValueError(f"the strategy must be one of {', '.join(STRATEGIES)} (any case)")
    return value


class _Settings(Strict):
    """What a model-wide and a per-layer entry share."""

    Precision: PrecisionSpec | None = None
    ReuseFactor: PositiveInt | None = None
    Strategy: str | None = None
    KernelSparse: bool | None = None
    Multipliers: Literal["auto", "fabric"] | None = None  # "fabric": products from LUTs (hls/multipliers.py)

    _check_strategy = field_validator("Strategy")(_strategy)


class LayerSettings(_Settings):
    """One entry of `LayerName` or `LayerType`."""

    Trace: bool | None = None
    ParallelizationFactor: PositiveInt | None = None
    ConvImplementation: str | None = None
    table_size: PositiveInt | None = None
    table_t: str | None = None
    accum_t: str | None = None


class ModelSettings(_Settings):
    BramFactor: PositiveInt | None = None
    TraceOutput: bool | None = None


class HLSConfigSection(Strict):
    Model: ModelSettings | None = None
    LayerName: dict[str, LayerSettings] | None = None
    LayerType: dict[str, LayerSettings] | None = None


class RtlSection(Strict):
    """The RTL backend's own settings (hls4ml's backends ignore them)."""

    Unroll: bool | None = None  # every output position's circuit at once, instead of one reused over them
    LatencyCutoff: PositiveFloat | None = None  # the most adder delays between two pipeline registers


class PresetFile(Strict):
    """A preset: hls4ml's config dictionary, as much of it as fpgaprune passes on, and the RTL backend's section."""

    IOType: Literal["io_parallel", "io_stream"] | None = None
    Backend: str | None = None
    HLSConfig: HLSConfigSection | None = None
    RTL: RtlSection | None = None


def layer_setting(hls_config: dict, layer: str, key: str, default=None):
    """A layer's `key` in an hls config: its own `LayerName` entry's, else the `Model` section's, else `default`."""
    model_value = (hls_config.get("Model") or {}).get(key, default)
    return ((hls_config.get("LayerName") or {}).get(layer) or {}).get(key, model_value)


def check_preset(where: str, preset: dict) -> dict:
    """`preset` if it is one hls4ml knows here; else HlsConfigError naming `where`, the key and what is allowed."""
    if not isinstance(preset, dict):
        raise HlsConfigError(f"{where}: expected a mapping, found {type(preset).__name__}")
    validate_mapping(preset, PresetFile, HlsConfigError, Located(where, {}))
    return preset


def load_preset(preset) -> dict:
    """A preset by name (`latency_parallel`, ...), a path to a YAML file, or a dict in the same form."""
    if isinstance(preset, dict):
        return check_preset("hls config", copy.deepcopy(preset))
    path = named_file("hls_configs", preset, "hls config preset")
    parsed, _ = load_yaml_file(path, PresetFile, HlsConfigError, "hls config preset")
    return parsed.model_dump(exclude_unset=True)
