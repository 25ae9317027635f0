"""HoldConstraint: the Keras constraint that keeps selected entries of one variable at their targets.

tf_keras optimizers apply a variable's constraint after every update, after weight decay and momentum.
So `where(mask, target, w)` there is exactly the "re-assign the held entries after each step" reference,
run inside the training graph, and free entries train exactly as they would have. It serializes with the
model (`.keras`, `.h5`) because it is part of the layer's config. The mask and target live in non-trainable
variables owned by the constraint (not model weights), so pruning schedules can grow a mask during `fit`.
"""

import numpy as np
import tensorflow as tf

from fpgaprune.masking.manifest import HoldEntry, compile_entries
from fpgaprune.tfk import keras, qkeras_objects


@keras.saving.register_keras_serializable(package="fpgaprune")
class HoldConstraint(keras.constraints.Constraint):
    """Hold the entries named by `entries` at their targets; `inner` is the layer's own constraint, applied first."""

    def __init__(self, entries, inner=None):
        self.entries = tuple(e if isinstance(e, HoldEntry) else HoldEntry.from_json(e, "HoldConstraint")
                             for e in entries)
        if isinstance(inner, dict):
            inner = keras.constraints.deserialize(inner, custom_objects=qkeras_objects())
        self.inner = inner
        self._state = None  # (shape, mask variable, target variable), made on first use

    def compiled(self, shape) -> tuple[np.ndarray, np.ndarray]:
        """The (mask, target) arrays for a variable of `shape`."""
        return compile_entries(self.entries, tuple(int(n) for n in shape))

    def _variables(self, shape):
        shape = tuple(int(n) for n in shape)
        if self._state is None or self._state[0] != shape:
            mask, target = self.compiled(shape)
            with tf.init_scope():  # lifted out of any training graph, like optimizer slots
                self._state = (
                    shape,
                    tf.Variable(mask, trainable=False, name="hold_mask"),
                    tf.Variable(target, trainable=False, name="hold_target"),
                )
        return self._state[1], self._state[2]

    def set_entries(self, entries) -> None:
        """Replace the held entries in place; a training graph that already uses this hold sees the change."""
        self.entries = tuple(entries)
        if self._state is not None:
            mask, target = self.compiled(self._state[0])
            self._state[1].assign(mask)
            self._state[2].assign(target)

    def hold(self, w):
        """Only the hold: selected entries replaced by their targets, everything else untouched."""
        mask, target = self._variables(w.shape)
        return tf.where(mask, tf.cast(target, w.dtype), w)

    def __call__(self, w):
        if self.inner is not None:
            w = self.inner(w)
        return self.hold(w)

    def get_config(self):
        inner = None if self.inner is None else keras.constraints.serialize(self.inner)
        return {"entries": [entry.to_json() for entry in self.entries], "inner": inner}
