"""The hold as TensorFlow state, for the Keras front ends: `where(mask, target, w)` as a constraint.

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

Each Keras front end makes `TensorFlowHold` its framework's constraint class (`frontends/qkeras/holds.py`,
`frontends/keras3/holds.py`), registered as "fpgaprune>HoldConstraint".
"""

import functools

import tensorflow as tf

from fpgaprune.frontends.layer_reading import variable_of
from fpgaprune.masking.held import HeldEntries, is_hold
from fpgaprune.selection import maskable_weights


class TensorFlowHold(HeldEntries):
    """Keeps the held entries of one TensorFlow-backed variable at their targets, after its own constraint."""

    def __init__(self, entries, inner=None):
        super().__init__(entries, inner)
        self._state = None  # (shape, mask variable, target variable), made on first use

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

    def entries_changed(self) -> None:
        """A training graph that already uses this hold sees the new entries."""
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


def enforce_variable(variable) -> None:
    """Re-assign a held variable's held entries now, and guard it."""
    guard(variable)
    variable.assign(variable.constraint.hold(variable))


def hold_of(variable):
    """The hold a Keras variable carries (its constraint), or None."""
    constraint = getattr(variable, "constraint", None)
    return constraint if is_hold(constraint) else None


def with_holds(keras, constraint_class, model, groups: dict, keep_holds: bool, from_config=None):
    """Clone `model` with each held variable's constraint set (or reset to its inner one) and the holds baked
    in; `groups`: {(layer, weight name): [HoldEntry]}; `from_config(layer, config)` builds each clone (default:
    its class's `from_config`)."""
    from collections import defaultdict

    by_layer = defaultdict(dict)
    for (layer_name, weight_name), entries in groups.items():
        by_layer[layer_name][weight_name] = entries

    def clone_layer(layer):
        config = layer.get_config()
        for weight in maskable_weights(layer) or ():
            if weight.name not in by_layer.get(layer.name, {}):
                continue
            current = variable_of(weight, layer).constraint
            inner = current.inner if is_hold(current) else current
            entries = by_layer[layer.name][weight.name]
            config[weight.constraint_key] = constraint_class(entries, inner) if keep_holds else inner
        return from_config(layer, config) if from_config else layer.__class__.from_config(config)

    clone = keras.models.clone_model(model, clone_function=clone_layer)
    clone.set_weights(model.get_weights())
    for layer in clone.layers:
        for weight in maskable_weights(layer) or ():
            variable, entries = variable_of(weight, layer), by_layer.get(layer.name, {}).get(weight.name)
            if variable is None or entries is None:  # empty holds are bound too: a schedule can grow them
                continue
            holder = variable.constraint if keep_holds else constraint_class(entries)
            if keep_holds:
                guard(variable)
            variable.assign(holder.hold(variable))
    return clone


def enforce(model) -> None:
    """Re-assign every held entry of a Keras model now, and guard its held variables."""
    for layer in model.layers:
        for weight in maskable_weights(layer) or ():
            variable = variable_of(weight, layer)
            if hold_of(variable) is not None:
                enforce_variable(variable)
