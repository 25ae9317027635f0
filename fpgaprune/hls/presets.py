"""hls4ml config presets (`hls_configs/*.yaml`, or a user's own file) in hls4ml's own config format."""

import copy

from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.yaml_files import check_keys, load_yaml, named_file

TOP_KEYS = {"IOType", "Backend", "HLSConfig"}
HLS_KEYS = {"Model", "LayerName", "LayerType"}
MODEL_KEYS = {"Precision", "ReuseFactor", "Strategy", "BramFactor", "TraceOutput", "KernelSparse"}
LAYER_KEYS = {"Precision", "ReuseFactor", "Strategy", "Trace", "KernelSparse", "ParallelizationFactor",
              "ConvImplementation", "table_size", "table_t", "accum_t"}
STRATEGIES = {"latency", "resource", "resource_unrolled", "distributed_arithmetic"}
IO_TYPES = {"io_parallel", "io_stream"}


def check_preset(where: str, preset: dict) -> dict:
    """`preset` if every key is one hls4ml knows here; else HlsConfigError with the allowed keys."""
    check_keys(where, preset, TOP_KEYS)
    if "IOType" in preset and preset["IOType"] not in IO_TYPES:
        raise HlsConfigError(f"{where}: IOType '{preset['IOType']}' is not one of {', '.join(sorted(IO_TYPES))}")
    hls = preset.get("HLSConfig", {})
    check_keys(f"{where}: HLSConfig", hls, HLS_KEYS)
    check_keys(f"{where}: HLSConfig.Model", hls.get("Model", {}), MODEL_KEYS)
    for section in ("LayerName", "LayerType"):
        for name, layer in hls.get(section, {}).items():
            check_keys(f"{where}: HLSConfig.{section}.{name}", layer, LAYER_KEYS)
    strategy = str(hls.get("Model", {}).get("Strategy", "latency")).lower()
    if strategy not in STRATEGIES:
        raise HlsConfigError(f"{where}: Strategy '{strategy}' is not one of {', '.join(sorted(STRATEGIES))}")
    return preset


def load_preset(preset) -> dict:
    """A preset by name (`latency_parallel`, ...), a path to a YAML file, or a dict in the same form."""
    if isinstance(preset, dict):
        return check_preset("hls config", copy.deepcopy(preset))
    path = named_file("hls_configs", preset, "hls config preset")
    return check_preset(str(path), load_yaml(path))
