"""hls4ml types for merge layers (Add, Concatenate, ...) and for layers that only move or pad values.

hls4ml computes a merge of two tensors elementwise in full precision and assigns it to the result type
(`nnet_merge.h`), so a result that covers the exact range on the finest input grid is bit-exact.
"""

import itertools

from fpgaprune.hls.precision.plan import PrecisionPlan
from fpgaprune.model.layer_kinds import PADDINGS
from fpgaprune.quantize.fixed_types import FixedType, ValueRange


def merged_range(kind: str, inputs: list[ValueRange]) -> ValueRange:
    """The exact range and grid of `kind` applied to two inputs in the given ranges."""
    first, second = inputs
    frac = max(first.frac, second.frac)
    if kind == "Add":
        return ValueRange(first.lo + second.lo, first.hi + second.hi, frac)
    if kind == "Subtract":
        return ValueRange(first.lo - second.hi, first.hi - second.lo, frac)
    if kind == "Average":  # (a + b) * 0.5: one more fraction bit
        return ValueRange((first.lo + second.lo) / 2, (first.hi + second.hi) / 2, frac + 1)
    if kind == "Multiply":
        corners = [a * b for a, b in itertools.product((first.lo, first.hi), (second.lo, second.hi))]
        return ValueRange(min(corners), max(corners), first.frac + second.frac)
    if kind == "Maximum":
        return ValueRange(max(first.lo, second.lo), max(first.hi, second.hi), frac)
    if kind == "Minimum":
        return ValueRange(min(first.lo, second.lo), min(first.hi, second.hi), frac)
    return ValueRange(min(first.lo, second.lo), max(first.hi, second.hi), frac)  # Concatenate


def merge_types(plan: PrecisionPlan, name: str, kind: str, inputs: list) -> None:
    """The node's result type, or a note when an input's range is unknown or hls4ml cannot merge them."""
    if len(inputs) != 2:
        plan.notes.append(f"{name}: hls4ml 1.3 merges exactly two tensors, this {kind} has {len(inputs)}")
        return
    if any(source is None for source in inputs):
        plan.notes.append(
            f"{name}: an input of this {kind} has no derived range; it and what follows keep hls4ml's precisions"
        )
        return
    merged = merged_range(kind, inputs)
    plan.types[name] = {"result": FixedType.covering(merged.lo, merged.hi, merged.frac)}
    plan.ranges[name] = merged


def reshaping_types(plan: PrecisionPlan, name: str, kind: str, current: ValueRange) -> None:
    """Moved values keep their range; zero padding adds 0 to it. Each node gets a type that holds it."""
    if kind in PADDINGS:
        current = ValueRange(min(current.lo, 0.0), max(current.hi, 0.0), current.frac)
    plan.types[name] = {"result": FixedType.covering(current.lo, current.hi, current.frac)}
    plan.ranges[name] = current
