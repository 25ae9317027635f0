"""Masking: hold selected entries of weights at exact values through training, saving and export."""

from fpgaprune.masking.hold import check_quantizers_keep_zero, enforce, finalize, held_variables, hold, manifest_of
from fpgaprune.masking.hold_constraint import HoldConstraint
from fpgaprune.masking.manifest import FREEZE, PRUNE, HoldEntry, MaskManifest, compile_entries

__all__ = [
    "FREEZE",
    "PRUNE",
    "HoldConstraint",
    "HoldEntry",
    "MaskManifest",
    "check_quantizers_keep_zero",
    "compile_entries",
    "enforce",
    "finalize",
    "held_variables",
    "hold",
    "manifest_of",
]
