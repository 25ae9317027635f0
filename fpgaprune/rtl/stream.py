"""The network as a stream of pixels (hls4ml's io_stream, in RTL): each window layer is one circuit for one output
position, reused over the positions as its line buffer fills; the activations after it join its circuit; a Flatten
gathers a map into one beat; an Add or Concatenate is a circuit over a beat of each map it reads. A stage's circuit
is traced from its input's own bit widths (the stages it reads), so the packed buses of two stages agree value by
value."""

from dataclasses import dataclass

import numpy as np

from fpgaprune.errors import ExportError
from fpgaprune.rtl.logic import (
    CANNOT,
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
    merged_beat,
    pointwise,
    symbolic_inputs,
    window_function,
)


@dataclass
class Stage:
    """One stage of the stream: a window over an input map (`kind` "window"), a map gathered into one beat
    ("gather") or a map with zeros around it ("pad", for a convolution with padding after the first), with the
    layers it computes and its circuit (da4ml's `CombLogic`, None for a gather or pad)."""

    kind: str
    layers: list  # the names of the layers it computes, in order
    in_shape: tuple  # (height, width, channels) of what it reads
    out_shape: tuple  # (height, width, channels) of what it writes
    size: tuple = (1, 1)  # the window's rows and columns (a dilated kernel's span)
    strides: tuple = (1, 1)
    dilation: tuple = (1, 1)  # the kernel's taps are every dilation-th row and column of the window
    logic: object = None
    in_kifs: tuple = ()  # (k, i, f) arrays of one input pixel's values
    out_kifs: tuple = ()  # ... of one output beat's values
    source: str | None = None  # a gather's or pad's: the layer whose map it reads (None: the input)
    order: object = None  # a gather's: where each value of its beat comes from in the map (channels last)
    sources: tuple = (-1,)  # the stages whose beats it reads (-1: the network's input)
    parts: tuple = ()  # a merge's: the channels of each map it reads
    lowest: bool = False  # a pad stage's: it pads with each value's least (for a max pooling), not zeros
    pad: tuple = (0, 0, 0, 0)  # zeros around the map (top, left, bottom, right): a first stage's, added by the top
    # module to the network's input, or a pad stage's

    @property
    def top_pads(self) -> bool:
        """Whether the top module adds zeros around the network's input for it (a first window stage's)."""
        return self.kind == "window" and any(self.pad)

    @property
    def fed_shape(self) -> tuple:
        """(height, width, channels) of what is fed to it: its input map without the zeros the top adds."""
        if not self.top_pads:
            return self.in_shape
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
    """The record's layers as stream stages, each after the stages it reads (`Stage.sources`), from an input map of
    `shape`. One ExportError line naming a layer the RTL backend cannot write."""
    builder = _Builder(record, shape, tuple(np.full(shape[2], v) for v in kif_of(input_fixed)))
    for name in record.topological():
        builder.take(record.layers[name])
    builder.close()
    if not builder.stages:
        raise ExportError(f"model '{record.name}': no layer to write as RTL")
    output = builder.maps.get(record.outputs[-1])
    if output is None or output.stage != len(builder.stages) - 1:
        raise ExportError(f"model '{record.name}': its output '{record.outputs[-1]}' is not the stream's last stage")
    return builder.stages


@dataclass(frozen=True)
class _Map:
    """A map in the stream: the stage that sends it (-1: the network's input) and the layer whose map it is."""

    stage: int
    layer: str | None


class _Builder:
    """The stages, built layer by layer in topological order. A window layer (or a merge) opens a stage; the
    pointwise layers after it join its circuit while they are the only reader of the layer before; a stage is
    traced (closed) when another stage reads it or a new one opens."""

    def __init__(self, record, shape, kifs):
        self.record, self.input, self.first = record, (shape, kifs), channels_first(record)
        self.stages, self.open, self.maps = [], None, {}
        self.readers = _readers(record)

    def take(self, layer) -> None:
        sources = [self.maps[source] for source in layer.inbound] or [_Map(-1, None)]
        if layer.role in PASSING:
            self.maps[layer.name] = sources[0]
        elif layer.role in ("Add", "Concatenate"):
            self._merge(layer, sources)
        elif len(sources) > 1:
            raise ExportError(f"layer '{layer.name}' ({layer.class_name}) reads {len(sources)} layers; {CANNOT}")
        elif is_window(layer) or layer.role in FLATTENING:
            self._window(layer, sources[0])
        else:
            self._pointwise(layer, sources[0])

    def close(self) -> None:
        if self.open is not None:
            _trace(self.stages[self.open], self.record)
            self.open = None

    def read(self, source: _Map) -> tuple:
        """(shape, kifs) of the map `source`, its stage closed."""
        if source.stage < 0:
            return self.input
        if source.stage == self.open:
            self.close()
        stage = self.stages[source.stage]
        return stage.out_shape, stage.out_kifs

    def add(self, stage: Stage, sources, opened: bool = False) -> int:
        if opened:
            self.close()
        stage.sources = tuple(source.stage for source in sources)
        self.stages.append(stage)
        if opened:
            self.open = len(self.stages) - 1
        return len(self.stages) - 1

    def _pointwise(self, layer, source: _Map) -> None:
        joins = source.stage == self.open and source.stage >= 0 and self.readers.get(source.layer) == 1
        if joins and self.stages[source.stage].layers[-1] == source.layer:
            self.stages[source.stage].layers.append(layer.name)
        else:
            shape, kifs = self.read(source)
            self.add(Stage("window", [layer.name], shape, shape, in_kifs=kifs), [source], opened=True)
        self.maps[layer.name] = _Map(self.open, layer.name)

    def _window(self, layer, source: _Map) -> None:
        """A window layer or a Flatten: a gather where a map becomes one beat, a pad stage where a convolution
        inside the network pads its input, then its window stage."""
        shape, kifs = self.read(source)
        name = layer.name
        if layer.role in FLATTENING and layer.output_shape and len(layer.output_shape) > 2:
            raise ExportError(f"layer '{name}': a reshape to {layer.output_shape[1:]}; a stream flattens only")
        if (layer.role in FLATTENING or flattens(layer, shape)) and shape[:2] != (1, 1):
            label = name if layer.role in FLATTENING else f"{name}: its input, flattened"
            gather = _gather(label, shape, kifs, source.layer, flat_order(shape, self.first))
            source = _Map(self.add(gather, [source]), name if layer.role in FLATTENING else None)
            shape, kifs = gather.out_shape, gather.out_kifs
        if not is_window(layer):
            self.maps[name] = source
            return
        stage = _window_stage(layer, shape, kifs)
        pooling = layer.role in POOLINGS  # pads with each value's least (a max pooling's), not zeros
        if any(stage.pad) and (source.stage >= 0 or self.readers.get(None, 0) > 1 or pooling):  # a pad stage
            source = _Map(self.add(_padding(name, stage, kifs, source.layer, pooling), [source]), None)
            stage.pad = (0, 0, 0, 0)
        self.add(stage, [source], opened=True)
        self.maps[name] = _Map(self.open, name)

    def _merge(self, layer, sources) -> None:
        """Add or Concatenate: one circuit over a beat of each map it reads, as they come (a FIFO each)."""
        read = [self.read(source) for source in sources]
        shapes = {shape[:2] if layer.role == "Concatenate" else shape for shape, _ in read}
        if len(shapes) > 1:
            raise ExportError(f"layer '{layer.name}' ({layer.role}) reads maps of shapes {sorted(shapes)}")
        kifs = tuple(np.concatenate([k[axis] for _, k in read]) for axis in range(3))
        parts = tuple(shape[2] for shape, _ in read)
        height, width = read[0][0][:2]
        stage = Stage("merge", [layer.name], (height, width, sum(parts)), (height, width, 0), in_kifs=kifs, parts=parts)
        self.add(stage, sources, opened=True)
        self.maps[layer.name] = _Map(self.open, layer.name)


def _readers(record) -> dict:
    """{layer: how many layers read its map}, through layers that pass their input on (Dropout)."""
    counts, alias = {}, {}
    for name in record.topological():
        layer = record.layers[name]
        inbound = [alias.get(source, source) for source in layer.inbound] or [None]  # None: the input
        if layer.role in PASSING:
            alias[name] = inbound[0]
            continue
        for source in inbound:
            counts[source] = counts.get(source, 0) + 1
    return counts


def _window_stage(layer, shape, kifs) -> Stage:
    """A new window stage for `layer`. A layer with padding reads its input padded (`Stage.pad`): the top adds the
    zeros to the network's input, a pad stage the padding to a map inside it."""
    geometry = WindowGeometry(layer, shape)
    out = (geometry.out_height, geometry.out_width, 0)  # its channels: its circuit's outputs, once traced
    span = tuple((k - 1) * d + 1 for k, d in zip(geometry.size, geometry.dilation))
    stage = Stage("window", [layer.name], shape, out, span, geometry.strides, geometry.dilation, in_kifs=kifs)
    if geometry.padded:
        stage.pad = (*geometry.before, *geometry.after)
        stage.in_shape = (shape[0] + stage.pad[0] + stage.pad[2], shape[1] + stage.pad[1] + stage.pad[3], shape[2])
    return stage


def _padding(name: str, stage: Stage, kifs, source, lowest: bool) -> Stage:
    """The padding around the map a window `stage` reads inside the network, as a stage of its own (hls4ml's
    ZeroPadding in io_stream): zeros, or each value's least (`lowest`, a max pooling's)."""
    return Stage(
        "pad",
        [f"{name}: its padding"],
        stage.fed_shape,
        stage.in_shape,
        in_kifs=kifs,
        out_kifs=kifs,
        source=source,
        pad=stage.pad,
        lowest=lowest,
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
    (down, across), read = stage.dilation, []  # the window's taps the kernel reads, and where in the kernel
    for r in range(0, rows, down):
        read += [(r * cols + c, (r // down, c // across)) for c in range(0, cols, across)]
    first, after = record.layers[stage.layers[0]], stage.layers[1:]
    if stage.kind == "merge":  # one beat of each map it reads, side by side
        values = merged_beat(first, np.split(taps[0], np.cumsum(stage.parts)[:-1]))
    elif is_window(first):
        values = window_function(first, channels)(taps[[n for n, _ in read]], [place for _, place in read])
    else:
        after = stage.layers
    for name in after:  # the pointwise layers after it
        layer = record.layers[name]
        if layer.input_quantizer is not None:
            values = input_quantized(layer, values, channel_types(layer))
        values = pointwise(layer, values)
    stage.logic = comb_trace(inputs, values)
    stage.out_shape = (*stage.out_shape[:2], int(stage.logic.shape[1]))
    kifs = np.array([tuple(minimal_kif(q)) for q in stage.logic.out_qint], np.int64).reshape(-1, 3)
    stage.out_kifs = tuple(kifs[:, axis] for axis in range(3))
