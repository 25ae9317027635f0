"""hold(): a copy of a model whose selected entries stay at their targets through any training; finalize() undoes it.

The user's model is never modified: both return new models with the same layer names, classes and weight order.
"""

from collections import defaultdict

import numpy as np

from fpgaprune.errors import QuantizerZeroError
from fpgaprune.masking.manifest import FREEZE, HoldEntry, MaskManifest
from fpgaprune.record import resolved
from fpgaprune.selection import maskable_weights, parse_selector, resolve


def hold(model, masks: MaskManifest | None = None, *, prune=(), freeze=()):
    """Return a copy of `model` (or of a bound model's, `record.resolved`) in which the entries named by `masks`,
    `prune` and `freeze` are held.

    `prune` and `freeze` take selection strings such as "conv2[:, :, 29, 13]". Holds already on the model stay
    and the new ones are applied after them. Compile and fit the returned model as usual. A tf_keras model gives a
    tf_keras model, a Keras 3 model a Keras 3 model.
    """
    bound = resolved(model)
    bound.front.check_model(bound.model)
    requested = MaskManifest(list(masks or ()))
    for selection in [prune] if isinstance(prune, str) else prune:
        requested.prune(selection)
    for selection in [freeze] if isinstance(freeze, str) else freeze:
        requested.freeze(selection)
    record = bound.record
    groups = held_groups(record)
    for entry in requested:
        key, resolved_entry = _resolve_entry(record, entry, bound.front)
        groups[key].append(resolved_entry)
    held = bound.front.with_holds(bound.model, groups, keep_holds=True)
    check_quantizers_keep_zero(bound.made(held).record)
    return held


def finalize(model):
    """Return (plain model with the held values baked in and no fpgaprune constraint, the mask manifest)."""
    bound = resolved(model)
    bound.front.check_model(bound.model)
    groups = held_groups(bound.record)
    manifest = MaskManifest(entry for entries in groups.values() for entry in entries)
    return bound.front.with_holds(bound.model, groups, keep_holds=False), manifest


def manifest_of(model) -> MaskManifest:
    """The manifest of every hold on `model`, in layer order."""
    return MaskManifest(entry for entries in held_groups(resolved(model).record).values() for entry in entries)


def enforce(model) -> None:
    """Re-assign every held entry now (after `set_weights`, `load_weights` or an EMA swap, for example)."""
    bound = resolved(model)
    bound.front.enforce(bound.model)


def check_quantizers_keep_zero(record) -> None:
    """A pruned weight must stay 0 after its quantizer; refuse quantizers that map 0 elsewhere (from the model's
    record: what each held weight's quantizer makes of its pruned entries)."""
    for layer, weight in maskable_records(record):
        if weight.pruned_to is not None and np.any(weight.pruned_to != 0):
            value = weight.pruned_to[weight.pruned_to != 0][0]
            raise QuantizerZeroError(
                f"layer '{layer.name}' ({layer.class_name}): {weight.name} quantizer {weight.quantizer} maps 0 to "
                f"{value:g}, so pruned weights would not be 0 after quantization; use one that represents 0, e.g. "
                "quantized_bits(4,0,alpha=1) or ternary()"
            )


def maskable_records(record):
    """(layer record, weight record) of every weight a hold can mask, in layer order."""
    for layer in record.layers.values():
        for weight in maskable_weights(layer) or ():
            if weight.name in layer.weights:
                yield layer, layer.weights[weight.name]


def held_groups(record) -> dict:
    """{(layer, weight): its hold's entries} of every held weight of a model's record."""
    groups = defaultdict(list)
    for layer, weight in maskable_records(record):
        if weight.held is not None:  # a hold, even one with no entries yet, stays a hold
            groups[(layer.name, weight.name)].extend(weight.entries)
    return groups


def _resolve_entry(record, entry: HoldEntry, front):
    """Bind an entry to its weight: explicit variable name, checked index, freeze values made concrete."""
    selector = parse_selector(entry.path + (entry.index or ""), where=entry.where)
    found = resolve(record, selector)
    index, where = entry.index, entry.where
    if index is not None and front.indexes_own_layout:  # kept as the mask it selects
        index, where = None, found.mask
    bound = HoldEntry(found.layer.name, found.weight.name, entry.mode, index, where, entry.value)
    if entry.mode == FREEZE:
        if entry.value is None:
            bound = bound.with_value(np.asarray(found.record.values, np.float32)[found.mask])
        else:
            bound.targets(found.mask)  # checks that the value fits before anything is built
    return (found.layer.name, found.weight.name), bound
