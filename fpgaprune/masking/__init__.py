"""Masking: hold selected entries of weights at exact values through training, saving and export."""

from fpgaprune.framework import keras_front_end
from fpgaprune.masking.held import HeldEntries, is_hold
from fpgaprune.masking.hold import (
    check_quantizers_keep_zero,
    enforce,
    finalize,
    held_groups,
    hold,
    manifest_of,
    maskable_records,
)
from fpgaprune.masking.manifest import FREEZE, PRUNE, HoldEntry, MaskManifest, compile_entries

__all__ = [
    "FREEZE",
    "PRUNE",
    "HoldEntry",
    "MaskManifest",
    "check_quantizers_keep_zero",
    "compile_entries",
    "enforce",
    "finalize",
    "HeldEntries",
    "held_groups",
    "maskable_records",
    "hold",
    "is_hold",
    "manifest_of",
]


def __getattr__(name: str):
    if name == "HoldConstraint":  # tf_keras' hold constraint; Keras 3's is in `frontends/keras3/holds.py`
        return keras_front_end(2).user_module("holds").HoldConstraint
    raise AttributeError(f"module 'fpgaprune.masking' has no attribute {name!r}")
