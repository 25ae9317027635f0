"""What a strip gives (`StripResult`) and how it refuses (`StripError`); the rebuild itself is the model's front
end's (`FrontEnd.strip`: Keras models, `frontends/tensorflow/strip.py`)."""

from dataclasses import dataclass, field

import numpy as np

from fpgaprune.errors import FpgapruneError


class StripError(FpgapruneError):
    """The model cannot be stripped safely; the message names the layer and why."""


@dataclass
class StripResult:
    """`index_map[layer]["in"|"out"]`: the original index of each new input/output channel (or Dense row)."""

    model: object
    index_map: dict
    removed: dict = field(default_factory=dict)  # layer -> {original channel: reason}
    notes: list = field(default_factory=list)

    def new_index(self, layer: str, axis: str, original: int):
        """The new index of an original channel of `layer` (axis "in" or "out"), or None if it was removed."""
        kept = self.index_map[layer][axis]
        hits = np.flatnonzero(kept == original)
        return int(hits[0]) if hits.size else None


STRIP_KERAS_ONLY = (
    "strip rebuilds Keras models only; a PyTorch module keeps its dead channels, whose products the kernel-sparse "
    "export drops anyway (Torch-Pruning removes channels from a module)"
)
