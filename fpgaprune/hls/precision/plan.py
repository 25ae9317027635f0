"""The precision plan (hls4ml types per node) and the interval arithmetic that the derivations share."""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.model.layer_kinds import VALUES_PASS
from fpgaprune.quantize.fixed_types import ValueRange

# Nodes whose output is their input, reshaped at most (hls4ml gives them their input's type; the export hands
# hls4ml the model without the training-only ones).
PASSTHROUGH = VALUES_PASS


@dataclass
class PrecisionPlan:
    """Per hls4ml node: {"weight", "bias", "accum", "result"} types; `notes` for what was left to hls4ml."""

    input_name: str
    types: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)  # other per-node keys (table sizes)

    def hls_layer_config(self) -> dict:
        """The LayerName part of an hls4ml HLSConfig (granularity='name')."""
        config = {}
        for name, types in self.types.items():  # hls4ml reads table types (`*_t`) from the node's own keys
            config[name] = {
                "Precision": {k: t.hls() for k, t in types.items() if not k.endswith("_t")},
                **{k: t.hls() for k, t in types.items() if k.endswith("_t")},
            }
        for name, settings in self.settings.items():
            config.setdefault(name, {}).update(settings)
        return config


def column_bounds(weights: np.ndarray, bias, source: ValueRange) -> tuple[np.ndarray, np.ndarray]:
    """(smallest, largest) sum of each column of `weights` over inputs in `source`, plus the bias."""
    upper = np.maximum(weights * source.hi, weights * source.lo).sum(axis=0) + bias
    lower = np.minimum(weights * source.hi, weights * source.lo).sum(axis=0) + bias
    return lower, upper
