"""fpgaprune's own record of a model (`model_record.py`): made once by its front end, read by every stage after."""

from fpgaprune.framework import front_end_of
from fpgaprune.record.binding import Bound
from fpgaprune.record.model_record import ActivationRecord, BatchNormRecord, LayerRecord, ModelRecord, WeightRecord

__all__ = [
    "ActivationRecord",
    "Bound",
    "BatchNormRecord",
    "LayerRecord",
    "ModelRecord",
    "WeightRecord",
    "record_of",
    "resolved",
]


def resolved(model_or_bound) -> Bound:
    """`model_or_bound` bound to the front end whose framework built it (a `Bound` as it is): the one lookup an
    entry point makes; everything under it reads the binding."""
    if isinstance(model_or_bound, Bound):
        return model_or_bound
    return Bound(model_or_bound, front_end_of(model_or_bound))


def record_of(model_or_record):
    """The model's record (`record.ModelRecord`), described by its front end; a record as it is."""
    if isinstance(model_or_record, ModelRecord):
        return model_or_record
    return resolved(model_or_record).record
