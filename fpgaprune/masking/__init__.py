"""Masking: hold selected entries of weights at exact values through training, saving and export."""

from fpgaprune.masking.hold import check_quantizers_keep_zero, enforce, finalize, held_variables, hold, manifest_of
from fpgaprune.masking.hold_constraint import guard, is_hold
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
    "guard",
    "held_variables",
    "hold",
    "is_hold",
    "manifest_of",
]


def __getattr__(name: str):
    if name == "HoldConstraint":  # tf_keras' hold constraint; Keras 3's is in `frontends/keras3/holds.py`
        from fpgaprune.frontends.qkeras.holds import HoldConstraint

        return HoldConstraint
    raise AttributeError(f"module 'fpgaprune.masking' has no attribute {name!r}")
