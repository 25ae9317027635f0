"""NumPy-style index strings, parsed (never evaluated) into per-axis selections.

`[:, :, 29, 13]`, `[..., 13]`, `[3, :]`, `[:, :, [1, 5, 29], 13]`, `[0:16:2]`. Lists select per axis
(orthogonally, like `np.ix_`): `[:, :, [1, 5], [2, 3]]` is the four kernels (1,2), (1,3), (5,2), (5,3).
"""

import ast
from typing import Union

import numpy as np

AxisIndex = Union[int, slice, tuple, type(Ellipsis)]  # a tuple is a list of ints


class IndexSyntaxError(ValueError):
    """The index text is not a supported NumPy-style index; the message says what was found."""


def parse_index(text: str) -> tuple[AxisIndex, ...]:
    """Parse `[a, b, ...]` into a tuple of ints, slices, int tuples (lists) and Ellipsis."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        raise IndexSyntaxError(f"an index must look like [i, j, ...], got {text!r}")
    try:
        tree = ast.parse("_" + stripped, mode="eval")
    except SyntaxError as exc:
        raise IndexSyntaxError(f"cannot parse index {text!r} ({exc.msg})") from None
    node = tree.body
    if not isinstance(node, ast.Subscript):
        raise IndexSyntaxError(f"cannot parse index {text!r}")
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    axes = tuple(_axis(part, text) for part in parts)
    if sum(axis is Ellipsis for axis in axes) > 1:
        raise IndexSyntaxError(f"index {text!r} has more than one '...'")
    return axes


def _int(node: ast.AST, text: str) -> int:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _int(node.operand, text)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    found = ast.unparse(node)
    raise IndexSyntaxError(f"index {text!r}: expected an integer, found {found!r}")


def _axis(node: ast.AST, text: str) -> AxisIndex:
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    if isinstance(node, ast.Slice):
        bounds = [None if part is None else _int(part, text) for part in (node.lower, node.upper, node.step)]
        if bounds[2] == 0:
            raise IndexSyntaxError(f"index {text!r}: a slice step cannot be 0")
        return slice(*bounds)
    if isinstance(node, ast.List):
        if not node.elts:
            raise IndexSyntaxError(f"index {text!r}: an empty list selects nothing")
        return tuple(_int(elt, text) for elt in node.elts)
    return _int(node, text)


def index_to_mask(axes: tuple[AxisIndex, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The boolean mask of `shape` that the parsed index selects; ValueError says which axis is wrong."""
    axes = _expand_ellipsis(axes, len(shape))
    positions = [_positions(axis, size, dim) for dim, (axis, size) in enumerate(zip(axes, shape))]
    mask = np.zeros(shape, dtype=bool)
    mask[np.ix_(*positions)] = True
    return mask


def _expand_ellipsis(axes: tuple[AxisIndex, ...], ndim: int) -> tuple[AxisIndex, ...]:
    explicit = [axis for axis in axes if axis is not Ellipsis]
    if len(explicit) > ndim:
        raise ValueError(f"{len(explicit)} indices for a {ndim}-d variable")
    fill = (slice(None),) * (ndim - len(explicit))
    if Ellipsis in axes:
        at = axes.index(Ellipsis)
        return tuple(explicit[:at]) + fill + tuple(explicit[at:])
    return tuple(explicit) + fill


def _positions(axis: AxisIndex, size: int, dim: int) -> np.ndarray:
    if isinstance(axis, slice):
        for bound in (axis.start, axis.stop):
            if bound is not None and not -size <= bound <= size:
                raise ValueError(f"slice bound {bound} is out of range for axis {dim} of size {size}")
        picked = np.arange(size)[axis]
        if picked.size == 0:
            raise ValueError(f"slice {_slice_text(axis)} selects nothing on axis {dim} of size {size}")
        return picked
    values = axis if isinstance(axis, tuple) else (axis,)
    for value in values:
        if not -size <= value < size:
            raise ValueError(f"index {value} is out of range for axis {dim} of size {size}")
    return np.array([value % size for value in values])


def _slice_text(axis: slice) -> str:
    parts = ["" if part is None else str(part) for part in (axis.start, axis.stop, axis.step)]
    return ":".join(parts[:2] if axis.step is None else parts)
