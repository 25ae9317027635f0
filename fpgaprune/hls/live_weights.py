"""Which weights of an hls4ml Dense/Conv node are live, read exactly as the C++ weight header will hold them.

A weight is live when the value hls4ml writes into the header, converted to the weight type the way
`ap_fixed` converts it, is nonzero. The canonical layout is a (K, n_out) matrix: K runs over the
im2col window in (filter height, filter width, input channel) order, or over the Dense inputs.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class KernelOrigin:
    """How the node's channels are named in the user's original model (before any strip)."""

    layer: str
    inputs: list  # original input channel (or Dense row) of each current one
    outputs: list  # original output channel of each current one
    layout: list | None = None  # the user's layout -> fpgaprune's, axis by axis (PyTorch's); None: the same

    @classmethod
    def identity(cls, layer: str, n_in: int, n_out: int) -> "KernelOrigin":
        return cls(layer, list(range(n_in)), list(range(n_out)))

    @classmethod
    def from_config(cls, node_name: str, config: dict | None, n_in: int, n_out: int) -> "KernelOrigin":
        if not config:
            return cls.identity(node_name, n_in, n_out)
        return cls(
            config.get("layer", node_name),
            list(config.get("in", range(n_in))),
            list(config.get("out", range(n_out))),
            config.get("layout"),
        )

    def named(self, *index) -> str:
        """`layer[...]` for an index in fpgaprune's layout (a kernel's outputs last), written in the user's layout:
        `conv2[:, :, 29, 13]` for Keras, `features.3[13, 29, :, :]` for PyTorch."""
        parts = [str(part) for part in index]
        if self.layout is not None and len(self.layout) == len(parts):
            user = [""] * len(parts)
            for axis, source in enumerate(self.layout):
                user[source] = parts[axis]
            parts = user
        return f"{self.layer}[{', '.join(parts)}]"


@dataclass
class LivePlan:
    """The live weights of one node, in the order the header stores them (by output, then window position)."""

    window: tuple  # (filter height, filter width, input channels); (1, 1, n_in) for Dense
    n_out: int
    rows: np.ndarray  # window position of each live weight
    cols: np.ndarray  # output of each live weight
    values: np.ndarray  # header value of each live weight
    origin: KernelOrigin
    kind: str  # "dense", "conv1d" or "conv2d"
    notes: list = field(default_factory=list)

    @property
    def n_in(self) -> int:
        return int(np.prod(self.window))

    @property
    def n_live(self) -> int:
        return len(self.values)

    def original_index(self, row: int, col: int) -> str:
        """The weight's index in the original layer, e.g. `conv2[1, 2, 29, 13]`."""
        fh, fw, chan = np.unravel_index(row, self.window)
        ci, co = self.origin.inputs[chan], self.origin.outputs[col]
        spatial = {"dense": (), "conv1d": (fw,), "conv2d": (fh, fw)}[self.kind]
        return self.origin.named(*spatial, ci, co)

    def kept_kernels(self, col: int) -> list:
        """Original input-channel indices whose kernel into output `col` keeps a live weight."""
        chans = np.unique(np.unravel_index(self.rows[self.cols == col], self.window)[2])
        return [int(self.origin.inputs[c]) for c in chans]


def canonical_matrix(node) -> tuple[np.ndarray, tuple, str]:
    """(the weights as a (K, n_out) matrix, the window shape, the kind), undoing hls4ml's transposes."""
    data = np.asarray(node.weights["weight"].data)
    transposed = node.get_attr("_weights_transposed", False)
    if data.ndim == 2:  # Dense: (n_in, n_out), or (n_out, n_in) after the Resource transpose
        matrix = data.T if transposed else data
        return matrix, (1, 1, matrix.shape[0]), "dense"
    if transposed:  # Resource strategy: (F, [H,] W, C)
        data = np.moveaxis(data, 0, -1)
    window = (1,) + data.shape[:2] if data.ndim == 3 else data.shape[:3]
    kind = "conv1d" if data.ndim == 3 else "conv2d"
    return data.reshape(-1, data.shape[-1]), tuple(int(s) for s in window), kind


def header_values(variable, values: np.ndarray) -> np.ndarray:
    """`values` as the C++ header will hold them: hls4ml's decimal text, then converted to the weight type."""
    text = np.array([float(variable.precision_fmt.format(v)) for v in values.ravel()], dtype=np.float64)
    precision = variable.type.precision
    width, integer = getattr(precision, "width", None), getattr(precision, "integer", None)
    if width is None or integer is None:
        return text.reshape(values.shape)
    step = 2.0 ** -(width - integer)
    mode = str(getattr(precision, "rounding_mode", "") or "").upper()
    scaled = np.floor(text / step + 0.5) if mode.startswith("RND") else np.floor(text / step)
    return (scaled * step).reshape(values.shape)


def live_plan(node, origin_config: dict | None = None) -> LivePlan:
    """The live weights of `node`, read from its (quantized) weight variable."""
    matrix, window, kind = canonical_matrix(node)
    exact = header_values(node.weights["weight"], matrix)
    n_out = matrix.shape[1]
    origin = KernelOrigin.from_config(node.name, origin_config, window[2], n_out)
    cols, rows = np.nonzero(exact.T)  # sorted by output, then window position
    plan = LivePlan(window, n_out, rows, cols, exact[rows, cols], origin, kind)
    rounded = int(np.count_nonzero(matrix) - len(rows))
    if rounded:
        plan.notes.append(
            f"{node.name}: {rounded} nonzero weights round to 0 in the weight type; they make no hardware"
        )
    return plan
