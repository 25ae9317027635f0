"""Selection: turn names such as `conv2[:, :, 29, 13]` into boolean masks over one variable."""

from fpgaprune.selection.index_expr import index_to_mask, parse_index
from fpgaprune.selection.registry import MaskableWeight, maskable_weights
from fpgaprune.selection.selector import ResolvedSelection, Selector, parse_selector, resolve

__all__ = [
    "MaskableWeight",
    "ResolvedSelection",
    "Selector",
    "index_to_mask",
    "maskable_weights",
    "parse_index",
    "parse_selector",
    "resolve",
]
