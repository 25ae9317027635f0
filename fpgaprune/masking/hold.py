"""hold(): a copy of a model whose selected entries stay at their targets through any training; finalize() undoes it.

The user's model is never modified: both return new models with the same layer names, classes and weight order.
"""

from collections import defaultdict

import numpy as np

from fpgaprune.errors import QuantizerZeroError
from fpgaprune.framework import front_end_of
from fpgaprune.masking.manifest import FREEZE, HoldEntry, MaskManifest
from fpgaprune.selection import maskable_weights, parse_selector, resolve


def hold(model, masks: MaskManifest | None = None, *, prune=(), freeze=()):
    """Return a copy of `model` in which the entries named by `masks`, `prune` and `freeze` are held.

    `prune` and `freeze` take selection strings such as "conv2[:, :, 29, 13]". Holds already on the model stay
    and the new ones are applied after them. Compile and fit the returned model as usual. A tf_keras model gives a
    tf_keras model, a Keras 3 model a Keras 3 model.
    """
    front = front_end_of(model)
    front.check_model(model)
    requested = MaskManifest(list(masks or ()))
    for selection in [prune] if isinstance(prune, str) else prune:
        requested.prune(selection)
    for selection in [freeze] if isinstance(freeze, str) else freeze:
        requested.freeze(selection)
    groups = _held_groups(model, front)
    for entry in requested:
        key, resolved_entry = _resolve_entry(model, entry, front)
        groups[key].append(resolved_entry)
    held = front.with_holds(model, groups, keep_holds=True)
    check_quantizers_keep_zero(held, front)
    return held


def finalize(model):
    """Return (plain model with the held values baked in and no fpgaprune constraint, the mask manifest)."""
    front = front_end_of(model)
    front.check_model(model)
    groups = _held_groups(model, front)
    manifest = MaskManifest(entry for entries in groups.values() for entry in entries)
    return front.with_holds(model, groups, keep_holds=False), manifest


def manifest_of(model) -> MaskManifest:
    """The manifest of every hold on `model`, in layer order."""
    return MaskManifest(entry for entries in _held_groups(model, front_end_of(model)).values() for entry in entries)


def enforce(model) -> None:
    """Re-assign every held entry now (after `set_weights`, `load_weights` or an EMA swap, for example)."""
    front_end_of(model).enforce(model)


def held_variables(model, front):
    """(layer name, weight name, variable) of every variable of `model` (read by its front end) that carries a
    hold."""
    return [
        (layer.name, weight.name, variable)
        for layer, weight, variable in maskable_variables(model, front)
        if front.hold_of(variable) is not None
    ]


def check_quantizers_keep_zero(model, front) -> None:
    """A pruned weight must stay 0 after its quantizer; refuse quantizers that map 0 elsewhere."""
    for layer, weight, variable in maskable_variables(model, front):
        constraint = front.hold_of(variable)
        if constraint is None:
            continue
        mask, target = constraint.compiled(tuple(variable.shape))
        pruned = mask & (target == 0)
        quantizer = front.weight_quantizer(layer, weight.role)
        if quantizer is None or not pruned.any():
            continue
        values = np.asarray(front.array(variable), np.float32)
        quantized = front.pruned_values(quantizer, values, pruned)  # the weights as training will see them
        if np.any(quantized != 0):
            raise QuantizerZeroError(
                f"layer '{layer.name}' ({type(layer).__name__}): {weight.name} quantizer {quantizer} maps 0 to "
                f"{quantized[quantized != 0][0]:g}, so pruned weights would not be 0 after quantization; use one "
                "that represents 0, e.g. quantized_bits(4,0,alpha=1) or ternary()"
            )


def maskable_variables(model, front):
    """(layer, MaskableWeight, variable) of every weight a hold can mask, in layer order (`front`: the model's
    front end)."""
    for layer in front.layers(model):
        for weight in maskable_weights(layer) or ():
            variable = weight.variable(layer)
            if variable is not None:
                yield layer, weight, variable


def _held_groups(model, front) -> dict:
    groups = defaultdict(list)
    for layer, weight, variable in maskable_variables(model, front):
        held = front.hold_of(variable)
        if held is not None:
            groups[(layer.name, weight.name)].extend(held.entries)
    return groups


def _resolve_entry(model, entry: HoldEntry, front):
    """Bind an entry to its variable: explicit variable name, checked index, freeze values made concrete."""
    selector = parse_selector(entry.path + (entry.index or ""), where=entry.where)
    resolved = resolve(model, selector, front)
    index, where = entry.index, entry.where
    if index is not None and front.indexes_own_layout:  # kept as the mask it selects
        index, where = None, resolved.mask
    bound = HoldEntry(resolved.layer.name, resolved.weight.name, entry.mode, index, where, entry.value)
    if entry.mode == FREEZE:
        if entry.value is None:
            current = np.asarray(front.array(resolved.variable), np.float32)
            bound = bound.with_value(current[resolved.mask])
        else:
            bound.targets(resolved.mask)  # checks that the value fits before anything is built
    return (resolved.layer.name, resolved.weight.name), bound
