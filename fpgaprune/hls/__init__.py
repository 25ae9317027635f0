"""hls4ml integration: the Keras-2 routing adapter, presets and boards, the kernel-sparse export, C-sim."""

from fpgaprune.hls.adapter import config_from_model, convert_model
from fpgaprune.hls.boards import Board, boards, load_board
from fpgaprune.hls.config import derived_hls_config, merge_config
from fpgaprune.hls.csim import CsimResult, csim_check, hardware_input
from fpgaprune.hls.exporter import Export, export, export_config, load_export
from fpgaprune.hls.presets import load_preset
from fpgaprune.hls.product_count import count_products
from fpgaprune.hls.synth import csynth, find_hls_tool

__all__ = [
    "Board",
    "CsimResult",
    "Export",
    "boards",
    "config_from_model",
    "convert_model",
    "count_products",
    "csim_check",
    "csynth",
    "derived_hls_config",
    "export",
    "export_config",
    "find_hls_tool",
    "hardware_input",
    "load_board",
    "load_export",
    "load_preset",
    "merge_config",
]
