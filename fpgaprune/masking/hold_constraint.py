"""HoldConstraint: the Keras constraint that keeps selected entries of one variable at their targets.

tf_keras optimizers apply a variable's constraint after every update, after weight decay and momentum.
So `where(mask, target, w)` there is exactly the "re-assign the held entries after each step" reference,
run inside the training graph, and free entries train exactly as they would have. It serializes with the
model (`.keras`, `.h5`) because it is part of the layer's config.
"""

import numpy as np
import tensorflow as tf

from fpgaprune.masking.manifest import HoldEntry, compile_entries
from fpgaprune.tfk import keras, qkeras_objects


@keras.saving.register_keras_serializable(package="fpgaprune")
class HoldConstraint(keras.constraints.Constraint):
    """Hold the entries named by `entries` at their targets; `inner` is the layer's own constraint, applied first."""

    def __init__(self, entries, inner=None):
        self.entries = tuple(e if isinstance(e, HoldEntry) else HoldEntry.from_json(e, "HoldConstraint") for e in entries)
        if isinstance(inner, dict):
            inner = keras.constraints.deserialize(inner, custom_objects=qkeras_objects())
        self.inner = inner
        self._compiled: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    def compiled(self, shape) -> tuple[np.ndarray, np.ndarray]:
        """The (mask, target) arrays for a variable of `shape`, cached."""
        shape = tuple(int(n) for n in shape)
        if shape not in self._compiled:
            self._compiled[shape] = compile_entries(self.entries, shape)
        return self._compiled[shape]

    def hold(self, w):
        """Only the hold: selected entries replaced by their targets, everything else untouched."""
        mask, target = self.compiled(w.shape)
        return tf.where(tf.constant(mask), tf.constant(target, dtype=w.dtype), w)

    def __call__(self, w):
        if self.inner is not None:
            w = self.inner(w)
        return self.hold(w)

    def get_config(self):
        inner = None if self.inner is None else keras.constraints.serialize(self.inner)
        return {"entries": [entry.to_json() for entry in self.entries], "inner": inner}
