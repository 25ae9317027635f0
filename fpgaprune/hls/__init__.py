"""hls4ml integration: presets and boards, the kernel-sparse export, C-sim. Its modules import on first use."""

from fpgaprune.hls.boards import Board, boards, load_board  # eager: `boards` is both a module and a function
from fpgaprune.support.lazy import exports

_MODULES = {
    "config_from_model": "adapter",
    "convert_model": "adapter",
    "derived_hls_config": "config",
    "merge_config": "config",
    "CsimResult": "csim",
    "csim_check": "csim",
    "hardware_input": "csim",
    "Export": "exporter",
    "export": "exporter",
    "export_config": "exporter",
    "load_export": "exporter",
    "load_preset": "presets",
    "count_products": "product_count",
    "csynth": "synth",
    "find_hls_tool": "synth",
}
__getattr__ = exports(__name__, _MODULES)
__all__ = ["Board", "boards", "load_board", *sorted(_MODULES)]
