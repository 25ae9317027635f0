"""The network as a stream of pixels (hls4ml's io_stream, in RTL): each window layer is one circuit for one output
position, reused over the positions as its line buffer fills; the activations after it join its circuit; a Flatten
gathers a map into one beat. A stage's circuit is traced from its input's own bit widths (the stage before it), so
the packed buses of two stages agree value by value."""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.rtl.logic import (
    FLATTENING,
    PASSING,
    POOLINGS,
    WindowGeometry,
    channel_types,
    channels_first,
    flat_order,
    flattens,
    input_quantized,
    is_window,
    kif_of,
    pointwise,
    symbolic_inputs,
    window_function,
)

UNROLL_HINT = "export it unrolled (the config's RTL section: Unroll: true, as the rtl_unrolled preset)"


@dataclass
class Stage:
    """One stage of the stream: a window over an input map (`kind` "window"), a map gathered into one beat
    ("gather") or a map with zeros around it ("pad", for a convolution with padding after the first), with the
    layers it computes and its circuit (da4ml's `CombLogic`, None for a gather or pad)."""

    kind: str
    layers: list  # the names of the layers it computes, in order
    in_shape: tuple  # (height, width, channels) of what it reads
    out_shape: tuple  # (height, width, channels) of what it writes
    size: tuple = (1, 1)  # the window's rows and columns
    strides: tuple = (1, 1)
    logic: object = None
    in_kifs: tuple = ()  # (k, i, f) arrays of one input pixel's values
    out_kifs: tuple = ()  # ... of one output beat's values
    source: str | None = None  # a gather's or pad's: the layer whose map it reads (None: the input)
    order: object = None  # a gather's: where each value of its beat comes from in the map (channels last)
    pad: tuple = (0, 0, 0, 0)  # zeros around the map (top, left, bottom, right): a first stage's, added by the top
    # module to the network's input, or a pad stage's

    @property
    def fed_shape(self) -> tuple:
        """(height, width, channels) of what is fed to it: its input map without the zeros the top adds."""
        top, left, bottom, right = self.pad
        return self.in_shape[0] - top - bottom, self.in_shape[1] - left - right, self.in_shape[2]

    @property
    def beats(self) -> int:
        """Output beats per sample: one per output position (a gather: one)."""
        return self.out_shape[0] * self.out_shape[1]

    def fires(self, axis: int) -> list:
        """Per input row (axis 0) or column (1): whether a window ending there is an output position."""
        length, size, stride = self.in_shape[axis], self.size[axis], self.strides[axis]
        return [n >= size - 1 and (n - size + 1) % stride == 0 for n in range(length)]


def stream_stages(record, input_fixed, shape) -> list:
    """The record's layers as stream stages, in order, from an input map of `shape`. One ExportError line naming a
    layer the stream cannot take (a merge, padding, dilation) or the RTL backend cannot write."""
    order, first = record.topological(), channels_first(record)
    kifs = tuple(np.full(shape[2], v) for v in kif_of(input_fixed))
    stages, current, last = [], None, None  # the window stage the next pointwise layers join; the last layer

    def close():
        if current is not None:
            _trace(current, record)
            stages.append(current)
        return (current.out_shape, current.out_kifs) if current is not None else (shape, kifs)

    for name in order:
        layer = record.layers[name]
        if len(layer.inbound) > 1:
            raise ExportError(f"layer '{name}' ({layer.class_name}) merges streams; {UNROLL_HINT}")
        if layer.role in PASSING:
            continue
        if is_window(layer) or layer.role in FLATTENING:
            shape, kifs = close()
            if layer.role in FLATTENING and layer.output_shape and len(layer.output_shape) > 2:
                raise ExportError(f"layer '{name}': a reshape to {layer.output_shape[1:]}; a stream flattens only")
            if (layer.role in FLATTENING or flattens(layer, shape)) and shape[:2] != (1, 1):
                label = name if layer.role in FLATTENING else f"{name}: its input, flattened"
                stages.append(_gather(label, shape, kifs, last, flat_order(shape, first)))
                shape, kifs = stages[-1].out_shape, stages[-1].out_kifs
            current = _window_stage(layer, shape, kifs) if is_window(layer) else None
            if current is not None and any(current.pad) and stages:  # its zeros from a stage of their own
                stages.append(_padding(name, current, kifs, last))
                current.pad = (0, 0, 0, 0)
        else:
            current = current or _window_stage(None, shape, kifs)
            current.layers.append(name)
        last = name
    close()
    if not stages:
        raise ExportError(f"model '{record.name}': no layer to write as RTL")
    return stages


def _window_stage(layer, shape, kifs) -> Stage:
    """A new window stage for `layer` (None: an identity window of one pixel, for pointwise layers). A convolution
    with padding reads its input padded (`Stage.pad`): the top adds the zeros to the network's input, a pad stage
    to a map inside it."""
    if layer is None:
        return Stage("window", [], shape, shape, in_kifs=kifs)
    geometry = WindowGeometry(layer, shape)
    if (geometry.padded and layer.role in POOLINGS) or geometry.dilation != (1, 1):
        raise ExportError(
            f"layer '{layer.name}': padding '{geometry.padding}' of a pooling, or dilation, in a reused window (a "
            f"stream pads for convolutions); {UNROLL_HINT}"
        )
    out = (geometry.out_height, geometry.out_width, 0)  # its channels: its circuit's outputs, once traced
    stage = Stage("window", [layer.name], shape, out, geometry.size, geometry.strides, in_kifs=kifs)
    if geometry.padded:
        stage.pad = (*geometry.before, *geometry.after)
        stage.in_shape = (shape[0] + stage.pad[0] + stage.pad[2], shape[1] + stage.pad[1] + stage.pad[3], shape[2])
    return stage


def _padding(name: str, stage: Stage, kifs, source) -> Stage:
    """The zeros around the map a window `stage` reads inside the network, as a stage of their own (hls4ml's
    ZeroPadding before a convolution in io_stream)."""
    shape = stage.fed_shape
    return Stage(
        "pad", [f"{name}: its zeros"], shape, stage.in_shape, in_kifs=kifs, out_kifs=kifs, source=source, pad=stage.pad
    )


def _gather(name: str, shape, kifs, source, order) -> Stage:
    """A map gathered into one beat, its values in `order` (a flatten's, or a PyTorch Linear's implicit one)."""
    height, width, channels = shape
    flat = tuple(np.tile(v, height * width)[order] for v in kifs)
    out = (1, 1, height * width * channels)
    return Stage("gather", [name], shape, out, in_kifs=kifs, out_kifs=flat, source=source, order=order)


def _trace(stage: Stage, record) -> None:
    """The stage's circuit, from its window's taps (typed as its input pixel, tap by tap) through its layers."""
    from da4ml.trace import comb_trace
    from da4ml.types import minimal_kif

    rows, cols = stage.size
    channels = stage.in_shape[2]
    inputs, values = symbolic_inputs(np.tile(v, rows * cols) for v in stage.in_kifs)
    taps = np.array(values._vars, dtype=object).reshape(rows * cols, channels)
    places = [(r, c) for r in range(rows) for c in range(cols)]
    first = record.layers[stage.layers[0]]
    if is_window(first):
        values = window_function(first, channels)(taps, places)
    for name in stage.layers[1:] if is_window(first) else stage.layers:  # the pointwise layers after it
        layer = record.layers[name]
        if layer.input_quantizer is not None:
            values = input_quantized(layer, values, channel_types(layer))
        values = pointwise(layer, values)
    stage.logic = comb_trace(inputs, values)
    stage.out_shape = (*stage.out_shape[:2], int(stage.logic.shape[1]))
    kifs = np.array([tuple(minimal_kif(q)) for q in stage.logic.out_qint], np.int64).reshape(-1, 3)
    stage.out_kifs = tuple(kifs[:, axis] for axis in range(3))
