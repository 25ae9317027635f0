"""HoldConstraint: the Keras constraint that keeps selected entries of one variable at their targets.

Keras optimizers (tf_keras' and Keras 3's) apply a variable's constraint after every update, after weight
decay and momentum. So `where(mask, target, w)` there is exactly the "re-assign the held entries after each
step" reference, run inside the training graph, and free entries train exactly as they would have. It
serializes with the model (`.keras`, `.h5`) because it is part of the layer's config. The mask and target live
in non-trainable variables owned by the constraint (not model weights), so pruning schedules can grow a mask
during `fit`. They are TensorFlow variables: Keras 3 models are held on its TensorFlow backend.

One path writes a variable without its constraint: an optimizer with `use_ema=True` copies its moving average
into the weights at the end of `fit` (`finalize_variable_values`, in tf_keras and Keras 3 alike), and that
average was taken before the constraint applied. `guard` therefore wraps a held variable's `assign`, so that
no assignment (that copy, `ema_overwrite_frequency`, `set_weights`) can bring a held value back.

`HoldLogic` is the framework-neutral part. Each front end makes it its framework's constraint class
(`frontends/qkeras/holds.py`, `frontends/keras3/holds.py`), registered as "fpgaprune>HoldConstraint".
"""

import functools

import numpy as np
import tensorflow as tf

from fpgaprune.masking.manifest import HoldEntry, compile_entries


class HoldLogic:
    """Hold the entries named by `entries` at their targets; `inner` is the layer's own constraint, applied first."""

    def __init__(self, entries, inner=None):
        self.entries = tuple(
            e if isinstance(e, HoldEntry) else HoldEntry.from_json(e, "HoldConstraint") for e in entries
        )
        if isinstance(inner, dict):
            inner = self.deserialize_inner(inner)
        self.inner = inner
        self._state = None  # (shape, mask variable, target variable), made on first use

    def deserialize_inner(self, config: dict):
        """The layer's own constraint from its saved config: each front end's HoldConstraint says how."""
        raise NotImplementedError

    def serialize_inner(self):
        """The layer's own constraint as a config to save: each front end's HoldConstraint says how."""
        raise NotImplementedError

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
        if hasattr(w, "assign"):  # the optimizer passes the variable itself: guard it before any EMA copy
            guard(w)
        if self.inner is not None:
            w = self.inner(w)
        return self.hold(w)

    def get_config(self):
        return {"entries": [entry.to_json() for entry in self.entries], "inner": self.serialize_inner()}


def is_hold(constraint) -> bool:
    """Whether a variable's constraint is an fpgaprune hold (of any front end)."""
    return isinstance(constraint, HoldLogic)


def guard(variable) -> None:
    """Make every `assign` of a held variable keep its held entries (the EMA copy at the end of `fit` included).
    A Keras 3 variable wraps a TensorFlow variable (`variable.value`), which its optimizers assign to directly:
    both are guarded."""
    _guard_assign(variable, variable)
    inner = getattr(variable, "value", None)  # tf_keras: a method; Keras 3: the backend's tf.Variable
    if inner is not None and inner is not variable and not callable(inner) and hasattr(inner, "assign"):
        _guard_assign(inner, variable)


def _guard_assign(target, holder) -> None:
    """Wrap `target.assign` so that it applies the hold of `holder.constraint` first."""
    if getattr(target, "_fpgaprune_guarded", False):
        return
    unguarded = target.assign

    @functools.wraps(unguarded)
    def assign(value, *args, **kwargs):
        constraint = holder.constraint
        if is_hold(constraint):
            value = constraint.hold(tf.convert_to_tensor(value, dtype=target.dtype))
        return unguarded(value, *args, **kwargs)

    target.assign = assign
    target._fpgaprune_guarded = True
