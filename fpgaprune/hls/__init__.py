"""hls4ml integration: the Keras-2 routing adapter (and, later, the export and the sparse-kernel extension)."""

from fpgaprune.hls.adapter import config_from_model, convert_model

__all__ = ["config_from_model", "convert_model"]
