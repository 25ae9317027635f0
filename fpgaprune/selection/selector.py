"""Name the entries to hold: `layer[index]`, `layer/variable[index]`, `layer/variable`, or a boolean array."""

import difflib
import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from fpgaprune.errors import SelectionError, UnsupportedLayerError
from fpgaprune.selection.index_expr import IndexSyntaxError, index_to_mask, parse_index
from fpgaprune.selection.registry import MaskableWeight, default_weight, maskable_weights, supported_classes

# A layer name is anything TensorFlow allows but spaces and '['; a '/' in it (`head/fc`) is resolved against the model.
_SELECTOR = re.compile(r"^\s*(?P<layer>[^\s\[]+?)\s*(?:/\s*(?P<variable>\w+))?\s*(?P<index>\[.*\])?\s*$", re.S)


@dataclass(frozen=True)
class Selector:
    """What a user named. `index` is the index text, `where` a boolean array; neither means the whole variable."""

    layer: str
    variable: Optional[str] = None
    index: Optional[str] = None
    where: Optional[np.ndarray] = field(default=None, compare=False)

    def __str__(self) -> str:
        path = self.layer if self.variable is None else f"{self.layer}/{self.variable}"
        return path + (self.index or ("[<boolean array>]" if self.where is not None else ""))


@dataclass(frozen=True)
class ResolvedSelection:
    """A selector bound to one weight of one layer of a model's record: the layer's record, the weight's registry
    entry, the weight's record, the mask (in fpgaprune's layout)."""

    layer: object
    weight: MaskableWeight
    record: object
    mask: np.ndarray


def parse_selector(text: str, where: Optional[np.ndarray] = None) -> Selector:
    """Parse `conv2[:, :, 29, 13]`, `conv2/bias[3]`, `lstm/recurrent_kernel`. `where` selects by boolean array."""
    match = _SELECTOR.match(text) if isinstance(text, str) else None
    if match is None:
        raise SelectionError(f"selection {text!r} is malformed: expected 'layer[index]' or 'layer/variable[index]'")
    index = match["index"]
    if index is not None:
        try:
            parse_index(index)
        except IndexSyntaxError as exc:
            raise SelectionError(f"selection {text!r}: {exc}") from None
        if where is not None:
            raise SelectionError(f"selection {text!r}: give either an index or a boolean array, not both")
    return Selector(match["layer"], match["variable"], index, where)


def resolve(record, selector: Selector) -> ResolvedSelection:
    """Bind a selector to a weight of a model's record and compute its boolean mask; one-line errors otherwise."""
    joined = f"{selector.layer}/{selector.variable}"
    if selector.variable and selector.layer not in record.layers and joined in record.layers:  # a layer `head/fc`
        selector = Selector(joined, None, selector.index, selector.where)
    layer = _find_layer(record, selector.layer)
    weight = _find_weight(layer, selector)
    recorded = layer.weights.get(weight.name)
    if recorded is None:
        raise SelectionError(f"selection '{selector}': layer '{layer.name}' has no {weight.name} (use_bias=False?)")
    shape = recorded.shape
    if selector.where is not None:  # a boolean array is in fpgaprune's layout
        mask = np.asarray(selector.where)
        if mask.dtype != bool or mask.shape != shape:
            raise SelectionError(
                f"selection '{selector}': {layer.name}/{weight.name} has shape {shape} in fpgaprune's layout; the "
                f"boolean array has {mask.dtype} {mask.shape}"
            )
    elif selector.index is not None:  # an index is in the framework's own layout, and so are its messages
        own = recorded.own_shape
        try:
            mask = index_to_mask(parse_index(selector.index), own)
        except (IndexSyntaxError, ValueError) as exc:
            raise SelectionError(f"selection '{selector}': {layer.name}/{weight.name} has shape {own}; {exc}") from None
        mask = mask.transpose(recorded.layout) if recorded.layout else mask
    else:
        mask = np.ones(shape, dtype=bool)
    return ResolvedSelection(layer, weight, recorded, mask)


def _find_layer(record, name: str):
    if name not in record.layers:
        close = difflib.get_close_matches(name, list(record.layers), n=3, cutoff=0.5)
        hint = f"; close names: {', '.join(close)}" if close else f"; layers: {', '.join(record.layers)}"
        raise SelectionError(f"no layer named '{name}' in model '{record.name}'{hint}")
    return record.layers[name]


def _find_weight(layer, selector: Selector) -> MaskableWeight:
    class_name = layer.class_name
    weights = maskable_weights(layer)
    if weights is None:
        raise UnsupportedLayerError(
            f"layer '{layer.name}' is a {class_name}, which fpgaprune cannot mask; maskable classes: "
            f"{supported_classes(layer)}"
        )
    by_name = {weight.name: weight for weight in weights}
    wanted = selector.variable or default_weight(layer)
    if wanted is None:
        raise SelectionError(
            f"selection '{selector}': layer '{layer.name}' ({class_name}) has several kernels; name one, "
            f"e.g. '{layer.name}/{weights[0].name}{selector.index or ''}' (choices: {', '.join(by_name)})"
        )
    if wanted not in by_name:  # the framework's own name (PyTorch's `weight`)
        wanted = next((w.name for w in layer.weights.values() if w.own_name and w.own_name == wanted), wanted)
    if wanted not in by_name:
        raise SelectionError(
            f"selection '{selector}': layer '{layer.name}' ({class_name}) has no maskable variable '{wanted}'; "
            f"it has: {', '.join(by_name)}"
        )
    return by_name[wanted]
