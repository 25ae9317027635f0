"""hls4ml integration: the Keras-2 routing adapter (and, later, the export and the sparse-kernel extension)."""

from fpgaprune.hls.adapter import config_from_model, convert_model
from fpgaprune.hls.config import derived_hls_config, merge_config

__all__ = ["config_from_model", "convert_model", "derived_hls_config", "merge_config"]
