"""Structures: how a weight splits into the groups that one pruning decision keeps or removes.

A structure labels every entry of a weight with its group number. `kernel` groups a conv kernel
[*spatial, ci, co] by (ci, co); `filter`/`neuron` by the output channel; `input_channel` by the input
channel; `element` is unstructured; `block(h, w, avg|max)` tiles a Dense kernel as tf.contrib.model_pruning
did; `depthwise` groups a depthwise kernel [kh, kw, c, m] by (c, m).
"""

import re
from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import FpgapruneError
from fpgaprune.model.layer_kinds import KINDS, kind_of

KNOWN = sorted({name for kind in KINDS for name in kind.structures})


def allowed_structures(layer_or_class) -> tuple:
    """The structures a layer's kind allows, the first its default (`fpgaprune.model.layer_kinds`); a kind without
    structures (and a layer of no kind) is pruned only when named, element-wise."""
    kind = kind_of(layer_or_class)
    return kind.structures if kind is not None and kind.structures else ("element",)


def prunable(layer) -> bool:
    """Whether a pruner takes the layer by default (its kind has structures)."""
    kind = kind_of(layer)
    return kind is not None and bool(kind.structures)


_BLOCK = re.compile(r"^block\(\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*(avg|max)\s*)?\)$")


@dataclass(frozen=True)
class Structure:
    name: str
    block: tuple[int, int] = (1, 1)
    pooling: str = "avg"  # blocks only: the score of a block is the AVG or MAX of |w| over it

    def labels(self, shape: tuple) -> tuple[np.ndarray, int]:
        """(group number of every entry, number of groups) for a weight of `shape`."""
        shape = tuple(shape)
        if self.name == "element":
            return np.arange(int(np.prod(shape))).reshape(shape), int(np.prod(shape))
        if self.name in ("kernel", "depthwise"):
            ci, co = shape[-2], shape[-1]
            grid = np.arange(ci * co).reshape(ci, co)
            return np.broadcast_to(grid, shape), ci * co
        if self.name in ("filter", "neuron"):
            return np.broadcast_to(np.arange(shape[-1]), shape), shape[-1]
        if self.name == "input_channel":
            column = np.arange(shape[-2]).reshape(-1, 1)
            return np.broadcast_to(column, shape), shape[-2]
        if self.name == "block":
            if len(shape) != 2:
                raise FpgapruneError(f"block structure needs a 2-d Dense kernel, got shape {shape}")
            rows, cols = -(-shape[0] // self.block[0]), -(-shape[1] // self.block[1])
            i = np.arange(shape[0]).reshape(-1, 1) // self.block[0]
            j = np.arange(shape[1]).reshape(1, -1) // self.block[1]
            return i * cols + j, rows * cols
        raise FpgapruneError(f"unknown structure {self.name!r}")

    def __str__(self) -> str:
        return f"block({self.block[0]},{self.block[1]},{self.pooling})" if self.name == "block" else self.name


def parse_structure(spec) -> Structure | None:
    """`"kernel"`, `"block(4,4,max)"` or a Structure; None or "auto" means "the layer class's default"."""
    if spec is None or spec == "auto":
        return None
    if isinstance(spec, Structure):
        return spec
    text = str(spec).replace(" ", "")
    match = _BLOCK.match(text)
    if match:
        if min(int(match[1]), int(match[2])) < 1:
            raise FpgapruneError(f"block sizes must be >= 1, got {spec!r}")
        return Structure("block", (int(match[1]), int(match[2])), match[3] or "avg")
    if text not in KNOWN:
        raise FpgapruneError(f"unknown structure {spec!r}; known: {', '.join(KNOWN)}, block(h,w,avg|max)")
    return Structure(text)


def structure_for(spec, layer_name: str, layer_or_class, strict: bool = True) -> Structure:
    """The structure to prune a layer with. Strict: it must fit the layer's kind; otherwise the kind's default."""
    allowed = allowed_structures(layer_or_class)
    class_name = (
        layer_or_class
        if isinstance(layer_or_class, str)
        else layer_or_class.class_name
        if getattr(type(layer_or_class), "RECORDED", False)
        else type(layer_or_class).__name__
    )
    structure = parse_structure(spec)
    if structure is None or structure.name in allowed:
        return structure or Structure(allowed[0])
    if not strict:
        return Structure(allowed[0])
    raise FpgapruneError(
        f"layer '{layer_name}' ({class_name}) cannot be pruned by structure {spec!r}; allowed: {', '.join(allowed)}"
    )
