"""A held weight's bit widths, held beside its value: where every weight an HGQ2 bit width covers is held at 0.0,
that bit width is held at 0 (so EBOPs count no cost for it); where a held weight keeps a value, its bit widths
stay at what they were when it was held (so its quantized value cannot move). These holds are derived from the
weights' holds (`hold_bits`), not saved: loading a model or enforcing its holds derives them again."""

import numpy as np

from fpgaprune.frontends.keras3.holds import HoldConstraint
from fpgaprune.frontends.tensorflow.holds import enforce_variable, hold_of
from fpgaprune.masking.manifest import HoldEntry

# (the weight, its quantizer) of an HGQ2 layer
QUANTIZED_WEIGHTS = (("kernel", "_kq"), ("bias", "_bq"))


def _covered(mask: np.ndarray, shape: tuple, reduce) -> np.ndarray:
    """`mask` (a weight's) reduced onto a bit-width variable of `shape` (broadcast over its size-1 axes)."""
    axes = tuple(axis for axis, n in enumerate(shape) if n == 1 and mask.shape[axis] > 1)
    return reduce(mask, axis=axes, keepdims=True) if axes else mask


def _bit_entries(layer, weight: str, value_held, zero_held, variable) -> list:
    current = np.asarray(variable.numpy(), np.float32)
    shape = tuple(current.shape)
    zero = _covered(zero_held, shape, np.all) if zero_held.ndim == len(shape) else np.zeros(shape, bool)
    kept = _covered(value_held, shape, np.any) & ~zero if value_held.ndim == len(shape) else np.zeros(shape, bool)
    entries = []
    if zero.any() and variable.path.endswith("/b"):
        entries.append(HoldEntry(layer.name, f"{weight}_bits", "freeze", where=zero, value=np.zeros(shape, np.float32)))
    if kept.any():
        entries.append(HoldEntry(layer.name, f"{weight}_bits", "freeze", where=kept, value=current))
    return entries


def _held_weights(model):
    """(layer, weight name, variable, its HGQ2 quantizer, held mask, targets) of every held quantized weight."""
    for layer in model.layers:
        for weight, quantizer_name in QUANTIZED_WEIGHTS:
            variable, quantizer = getattr(layer, weight, None), getattr(layer, quantizer_name, None)
            hold = hold_of(variable) if variable is not None else None
            if hold is not None and quantizer is not None:
                yield (layer, weight, variable, quantizer, *hold.compiled(tuple(variable.shape)))


def hold_bits(model) -> None:
    """Hold the bit widths of every held weight of the model's HGQ2 layers (see the module's text)."""
    for layer, weight, variable, quantizer, mask, target in _held_weights(model):
        zero_held, value_held = mask & (target == 0), mask & (target != 0)
        internal = quantizer.quantizer
        for bits in (getattr(internal, "_b", None), getattr(internal, "_i", None), getattr(internal, "_f", None)):
            if bits is None or len(bits.shape) != len(variable.shape):
                continue
            entries = _bit_entries(layer, weight, value_held, zero_held, bits)
            if not entries:
                continue
            current = bits.constraint
            inner = current.inner if hold_of(bits) is not None else current
            bits.constraint = HoldConstraint(entries, inner)
            enforce_variable(bits)


def unrepresentable(model) -> list[str]:
    """The held weights whose held value their HGQ2 quantizer does not give back exactly: 'layer/kernel[...]'."""
    found = []
    for layer, weight, _, quantizer, mask, target in _held_weights(model):
        wrong = np.argwhere(mask & (np.asarray(quantizer(target, training=False)) != target))
        found += [f"{layer.name}/{weight}[{', '.join(str(int(i)) for i in index)}]" for index in wrong]
    return found


def warn_unrepresentable(model) -> None:
    """One warning naming the frozen weights whose value their quantizer cannot give back: the hardware holds
    their quantized value instead (constant, as their bit widths are held too)."""
    import warnings

    found = unrepresentable(model)
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        warnings.warn(
            f"{len(found)} frozen weight(s) are not representable at their HGQ2 bits ({shown}); the design holds "
            "their quantized values, constant through QAT",
            stacklevel=3,
        )
