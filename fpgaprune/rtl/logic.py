"""A model's layers as da4ml's logic, read from the record alone (layer kinds and roles, options, quantized weights,
activation types). A window layer (a convolution, a pooling, a Dense layer) is a function of the taps of one
output position (`window_function`); the unrolled network applies it at every position, a stream stage
(`stream.py`) once, reused. Constant products are distributed arithmetic: a weight that is 0 makes no adder. An
activation quantizer rounds and saturates as its record's type says (QKeras' quantized_relu: to nearest even,
saturating; a plain type: truncated, wrapping)."""

import numpy as np

from fpgaprune.errors import ExportError

# hls4ml 1.3's distributed_arithmetic pass: da4ml's solver options, and HWConfig(1, -1, -1)
SOLVER_OPTIONS = {"hard_dc": 2, "search_all_decompose_dc": True}
PASSING = ("InputLayer", "Dropout")  # roles that leave their input as it is
FLATTENING = ("Flatten", "Reshape")
CONVOLUTIONS = ("Conv1D", "Conv2D", "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D")
WINDOWS = ("Dense", *CONVOLUTIONS)  # layer kinds (a QConv2D's is Conv2D) that compute over a window
POOLINGS = ("MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D")
POINTWISE = ("Activation", "ReLU", "BatchNormalization")
CANNOT = (
    "the RTL backend writes Dense, convolutions (depthwise and separable too), max and average pooling, batch "
    "normalization of power-of-two parameters, ReLU and quantized activations (tanh and sigmoid as tables), "
    "HGQ2's fixed-point Quantizer, Flatten, Add and Concatenate"
)


def kif_of(fixed) -> tuple[int, int, int]:
    """da4ml's (sign, integer, fraction) bits of a `FixedType` (whose integer bits count the sign)."""
    sign = int(fixed.signed)
    return sign, fixed.integer - sign, fixed.frac


def symbolic_inputs(kifs):
    """da4ml's inputs (the array to trace from) and their values of the types `kifs` ((k, i, f) arrays)."""
    from da4ml.trace import FixedVariableArrayInput, HWConfig

    k, i, f = (np.asarray(v, np.int64) for v in kifs)
    inputs = FixedVariableArrayInput(k.size, HWConfig(1, -1, -1), solver_options=SOLVER_OPTIONS)
    return inputs, inputs.quantize(k, i, f)


def input_map(record, hardware_shape=None) -> tuple:
    """(height, width, channels) of the network's input: its record's, else the shape of its input in the hardware
    layout, batch first (a PyTorch module that has not run records none)."""
    first = record.layers[record.topological()[0]]
    shape = first.input_shape or first.output_shape
    shape = shape[0] if shape and isinstance(shape[0], (tuple, list)) else shape
    return spatial(shape or hardware_shape or ())


def channels_first(record) -> bool:
    """Whether the model flattens a map channel by channel (PyTorch's `flatten` of NCHW), not pixel by pixel."""
    return record.front_end == "PyTorch"


def flat_order(shape, first: bool) -> np.ndarray:
    """Where each value of a flattened (height, width, channels) map comes from, in its channels-last order."""
    order = np.arange(int(np.prod(shape))).reshape(shape)
    return (order.transpose(2, 0, 1) if first else order).ravel()


def flattens(layer, shape) -> bool:
    """A Dense layer on a map whose kernel reads all of it (PyTorch's Linear after a functional flatten)."""
    rows = layer.kernel.quantized.shape[0] if layer.kind == "Dense" and layer.kernel is not None else 0
    return shape[0] * shape[1] > 1 and rows == int(np.prod(shape))


def spatial(shape) -> tuple:
    """(height, width, channels) of a batch-first, channels-last shape (a flat one is 1 x 1 x N)."""
    dims = tuple(int(d) for d in shape[1:])
    if len(dims) == 1:
        return 1, 1, dims[0]
    if len(dims) == 2:
        return 1, dims[0], dims[1]
    if len(dims) == 3:
        return dims
    raise ExportError(f"a layer of shape {shape}: the RTL backend writes 1D and 2D feature maps and flat vectors")


def network_logic(record, input_fixed, shape):
    """da4ml's combinational logic of the whole network, fully unrolled (`CombLogic`): the flat input (channels
    last, of the map `shape`) of type `input_fixed` to the last output layer's values. One ExportError line naming
    a layer it cannot write."""
    from da4ml.trace import comb_trace

    order = record.topological()
    kif = kif_of(input_fixed)
    inputs, start = symbolic_inputs([np.full(int(np.prod(shape)), v) for v in kif])
    maps, first = {}, channels_first(record)
    for name in order:
        layer = record.layers[name]
        sources = [maps[source] for source in layer.inbound] or [_vars(start).reshape(shape)]
        maps[name] = _unrolled(layer, sources, first)
    return comb_trace(inputs, _array(maps[record.outputs[-1]].reshape(-1), start))


def _unrolled(layer, sources, first: bool):
    """One layer's output map (an object array of da4ml variables, height x width x channels)."""
    if layer.role in ("Add", "Concatenate"):
        return merged(layer, sources)
    if len(sources) > 1:
        raise ExportError(f"layer '{layer.name}' ({layer.class_name}) reads {len(sources)} layers; {CANNOT}")
    source = sources[0]
    if layer.role in FLATTENING or (is_window(layer) and flattens(layer, source.shape)):
        source = source.reshape(-1)[flat_order(source.shape, first)].reshape(1, 1, -1)
        if layer.role in FLATTENING:
            return source
    if layer.input_quantizer is not None:
        source = _vars(input_quantized(layer, source))
    if is_window(layer):
        geometry = WindowGeometry(layer, source.shape)
        function = window_function(layer, source.shape[-1], quantize_taps=False)
        rows, cols = geometry.out_height, geometry.out_width
        out = [function(*geometry.taps(source, y, x)) for y in range(rows) for x in range(cols)]
        return _stacked(out).reshape(rows, cols, -1)
    if layer.role in PASSING:
        return source
    return _vars(pointwise(layer, _flat_array(source))).reshape(source.shape)


def merged(layer, sources):
    """Add: the sum of its inputs; Concatenate: along the channels."""
    shapes = {s.shape for s in sources}
    if layer.role == "Add":
        if len(shapes) > 1:
            raise ExportError(f"layer '{layer.name}': adds maps of shapes {sorted(shapes)}")
        total = sources[0]
        for source in sources[1:]:
            total = total + source
        return total
    axis = layer.options.get("axis", -1)
    if axis not in (-1, len(layer.output_shape) - 1):
        raise ExportError(f"layer '{layer.name}': the RTL backend concatenates along the channels (axis -1) only")
    return np.concatenate(sources, axis=-1)


def merged_beat(layer, parts):
    """Add or Concatenate of one beat of each map (object arrays of da4ml variables), as a `FixedVariableArray`."""
    return _array(merged(layer, [_vars(part) for part in parts]))


def is_window(layer) -> bool:
    return (layer.kind or layer.role) in WINDOWS or layer.role in POOLINGS


class WindowGeometry:
    """Where a window layer reads: its kernel's size, strides, dilation and padding over an input map."""

    def __init__(self, layer, in_shape):
        height, width = in_shape[0], in_shape[1]
        if layer.kind == "Dense":
            size, strides, dilation = (1, 1), (1, 1), (1, 1)
        elif layer.role in POOLINGS:
            size = _pair(layer.options.get("pool_size", 2))
            strides, dilation = _pair(layer.options.get("strides") or size), (1, 1)
        else:
            kernel = layer.weights.get("kernel") or layer.weights.get("depthwise_kernel")
            size = (1, *kernel.quantized.shape[:1]) if kernel.quantized.ndim == 3 else kernel.quantized.shape[:2]
            strides, dilation = _pair(layer.options.get("strides", 1)), _pair(layer.options.get("dilation_rate", 1))
        self.layer, self.size, self.strides, self.dilation = layer.name, tuple(size), strides, dilation
        self.padding = "valid" if layer.kind == "Dense" else layer.options.get("padding", "valid")
        span = [(k - 1) * d + 1 for k, d in zip(self.size, dilation)]
        if self.padding == "valid":
            self.out_height, self.out_width = ((n - s) // t + 1 for n, s, t in zip((height, width), span, strides))
            self.before, self.after, self.padded = (0, 0), (0, 0), False
        elif self.padding == "same":
            self.out_height, self.out_width = (-(-n // t) for n, t in zip((height, width), strides))
            totals = [max((o - 1) * t + s - n, 0) for o, t, s, n in zip(self.outs, strides, span, (height, width))]
            self.before, self.padded = tuple(total // 2 for total in totals), any(totals)
            self.after = tuple(total - before for total, before in zip(totals, self.before))
        else:
            raise ExportError(f"layer '{layer.name}': padding '{self.padding}' (the RTL backend: 'valid' or 'same')")
        self.height, self.width = height, width

    @property
    def outs(self):
        return self.out_height, self.out_width

    def taps(self, source, y: int, x: int):
        """The values of the window at output position (y, x) that lie in the map, (taps, channels), and their
        places in the kernel (row, column); a tap in the padding is left out (it would multiply a 0)."""
        values, places = [], []
        for row in range(self.size[0]):
            for col in range(self.size[1]):
                iy = y * self.strides[0] + row * self.dilation[0] - self.before[0]
                ix = x * self.strides[1] + col * self.dilation[1] - self.before[1]
                if 0 <= iy < self.height and 0 <= ix < self.width:
                    values.append(source[iy, ix])
                    places.append((row, col))
        return np.array(values, dtype=object), places


def window_function(layer, channels: int, quantize_taps: bool = True):
    """`f(taps, places) -> outputs`: the layer at one output position, then its own activation. `taps` is an object
    array (taps, channels) of da4ml variables, `places` their (row, column) in the kernel. A layer's own input
    quantizer (HGQ2's) quantizes the taps channel by channel (`quantize_taps`; else its map is quantized already)."""
    function = _window_function(layer, channels)
    if not quantize_taps or layer.input_quantizer is None:
        return function
    types = channel_types(layer)
    return lambda taps, places: function(_vars(input_quantized(layer, taps, types)), places)


def channel_types(layer) -> tuple:
    """(k, i, f) per channel of the layer's own input quantizer, for a circuit reused over positions: one line
    where its types differ by position."""
    types = layer.input_quantizer.per_channel()
    if types is None:
        raise ExportError(
            f"layer '{layer.name}': its input quantizer's types differ by position (HGQ2, value by value), so one "
            "reused circuit cannot serve every position; export it unrolled (the config's RTL section: Unroll: true), "
            "or quantize per channel (quantization.hgq2.activation_granularity: channel)"
        )
    return types


def input_quantized(layer, values, types=None):
    """`values` (an object array) through the layer's own input quantizer: its (k, i, f) `types` broadcast over
    them (by default its types per value, shaped as `values`), rounded and overflowing as its modes say."""
    quantizer, values = layer.input_quantizer, _vars(values)
    k, i, f = types or (np.reshape(v, values.shape) for v in (quantizer.k, quantizer.i, quantizer.f))
    if quantizer.round_mode not in ("TRN", "RND") or quantizer.overflow_mode not in ("WRAP", "SAT", "SAT_SYM"):
        raise ExportError(
            f"layer '{layer.name}': its input quantizer rounds {quantizer.round_mode} and overflows "
            f"{quantizer.overflow_mode}; the RTL backend writes TRN or RND, and WRAP, SAT or SAT_SYM"
        )
    return _array(values).quantize(k, i, f, quantizer.overflow_mode, quantizer.round_mode)


def _window_function(layer, channels: int):
    if layer.batchnorm is not None:
        raise ExportError(f"layer '{layer.name}': a batch normalization inside a layer; fold it into the kernel")
    if layer.role in POOLINGS:
        return _pooling(layer)
    if layer.kind == "Dense":
        kernel = _weight(layer, "kernel").reshape(1, 1, channels, -1)
        return _product(layer, lambda places: _rows(kernel, places))
    depthwise = layer.weights.get("depthwise_kernel")
    if depthwise is None:
        kernel = _kernel4(layer, _weight(layer, "kernel"))
        return _product(layer, lambda places: _rows(kernel, places))
    spread = _kernel4(layer, _weight(layer, "depthwise_kernel"))  # (rows, cols, channels, multiplier)
    pointwise_kernel = layer.weights.get("pointwise_kernel")
    point = _weight(layer, "pointwise_kernel").reshape(channels * spread.shape[3], -1) if pointwise_kernel else None
    return _product(layer, lambda places: _block_diagonal(spread, places), then=point)


def _product(layer, matrix_of, then=None):
    bias = _weight(layer, "bias") if layer.use_bias else None

    def function(taps, places):
        out = _array(taps.reshape(-1)) @ matrix_of(places)
        if then is not None:
            out = out @ then
        if bias is not None:
            out = out + bias
        return _activated(layer, layer.activation, out)

    return function


def _rows(kernel, places):
    """The kernel's rows for the taps at `places`, as one (taps x channels, outputs) matrix."""
    rows = np.stack([kernel[r, c] for r, c in places])
    return rows.reshape(-1, kernel.shape[-1])


def _block_diagonal(spread, places):
    """A depthwise kernel's taps as one matrix: channel c's taps feed only its own outputs c * m ... c * m + m - 1."""
    channels, multiplier = spread.shape[2], spread.shape[3]
    matrix = np.zeros((len(places), channels, channels * multiplier))
    for t, (r, c) in enumerate(places):
        for channel in range(channels):
            matrix[t, channel, channel * multiplier : (channel + 1) * multiplier] = spread[r, c, channel]
    return matrix.reshape(-1, channels * multiplier)


def _pooling(layer):
    average = layer.role.startswith("Average")
    area = int(np.prod(_pair(layer.options.get("pool_size", 2))))
    if average and (area & (area - 1) or layer.options.get("padding", "valid") != "valid"):
        raise ExportError(
            f"layer '{layer.name}': an average over {area} values with padding '{layer.options.get('padding')}'; "
            "the RTL backend averages power-of-two windows without padding"
        )

    def function(taps, places):
        values = _array(taps)
        if average:
            return _array(np.sum(values, axis=0)) * (1.0 / area)
        return _array(np.max(values, axis=0))

    return function


def quantizes_only(layer) -> bool:
    """A layer that only quantizes its input (HGQ2's `Quantizer`): its record's input quantizer is all it does."""
    return layer.role == "Quantizer" and layer.input_quantizer is not None


def pointwise(layer, values):
    """A layer that maps each value on its own (an activation, a quantizer, a batch normalization), on a flat array;
    a quantizing layer's values come quantized by its input quantizer already."""
    if quantizes_only(layer):
        return values
    if layer.applies is not None:  # QActivation: its quantizer
        return _activated(layer, layer.applies, values)
    if layer.role in ("Activation", "ReLU"):
        return _activated(layer, layer.activation or _Relu, values)
    if layer.batchnorm is not None:  # a batch normalization layer
        norm = layer.batchnorm
        scale, shift = (np.asarray(v, np.float64) for v in (norm.quantized_scale, norm.quantized_bias))
        why = "a batch normalization off a power-of-two grid: quantize it to fixed-point types, or fold it"
        _check_grid(layer, scale, why)
        _check_grid(layer, shift, why)
        return values * np.resize(scale, values.size) + np.resize(shift, values.size)
    raise ExportError(f"layer '{layer.name}' ({layer.class_name}): {CANNOT}")


def _weight(layer, name):
    weight = layer.weights.get(name)
    if weight is None:
        raise ExportError(f"layer '{layer.name}': no '{name}' in its record")
    array = np.asarray(weight.quantized, np.float64)
    _check_grid(layer, array)
    return array


def _kernel4(layer, kernel):
    """A convolution's kernel as (rows, columns, channels, outputs): a 1D one gets a row axis."""
    return kernel.reshape(1, *kernel.shape) if kernel.ndim == 3 else kernel


def _pair(value) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(int(v) for v in value) if len(value) == 2 else (1, int(value[0]))
    return (int(value), int(value))


OFF_GRID = (
    "weights off a power-of-two grid (a quantizer scale that is not a power of two); the RTL backend writes "
    "constants of fixed-point types"
)


def _check_grid(layer, array, why: str = OFF_GRID) -> None:
    """Weights on a power-of-two grid (da4ml's constants): one line where a scale makes them otherwise."""
    scaled = np.asarray(array) * 2.0**24
    if not np.array_equal(scaled, np.round(scaled)):
        raise ExportError(f"layer '{layer.name}': {why}")


class _Relu:
    """A float ReLU (an Activation layer's or a ReLU layer's, where the record names none)."""

    name, quantizer, fixed, relu = "relu", False, None, True


# The curves an activation quantizer may compute before it rounds, each a lookup table of its input's values
CURVES = {
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "2 sigmoid - 1": lambda x: 2.0 / (1.0 + np.exp(-x)) - 1.0,
}


def _activated(layer, activation, values):
    """`values` through the layer's activation: a quantizer of a fixed type (after its line, or through a table of
    its curve), a float ReLU, or the identity."""
    if activation is None or (not activation.quantizer and activation.name in ("", "linear")):
        return values
    if activation.quantizer and activation.fixed is not None:
        if activation.curve is not None:
            return _tabled(layer, activation, values)
        if activation.line is not None:
            slope, offset = activation.line
            values = _array(values) * float(slope) + float(offset)
        if activation.relu and activation.fixed.signed:
            values = values.relu()
        return quantized(values, activation.fixed)
    if activation.name == "relu":
        return values.relu()
    if activation.name in CURVES:
        raise ExportError(
            f"layer '{layer.name}': the RTL backend computes no float {activation.name}: quantize it (QKeras' "
            "quantized_tanh or quantized_sigmoid gives its table an output type), or end the model before it"
        )
    raise ExportError(
        f"layer '{layer.name}': the RTL backend computes no {activation.name or activation.class_name} yet; end the "
        "model before it"
    )


def _tabled(layer, activation, values):
    """An activation quantizer's curve as da4ml's lookup tables, one per input type: each entry the curve of one
    value the input can take, rounded into the quantizer's type as `quantized` rounds (exact on every input). Each
    input is first cut to the fewest bits that leave every entry as it was (`_narrowed`)."""
    curve = CURVES.get(activation.curve)
    if curve is None:
        raise ExportError(f"layer '{layer.name}': no table for the curve '{activation.curve}' ({', '.join(CURVES)})")
    k, i, f = kif_of(activation.fixed)
    rounding = activation.fixed.quantizing

    def table(x):
        return _rounded(curve(np.asarray(x, np.float64)), k, i, f, rounding)

    shape = _vars(values).shape
    narrowed = np.array([_narrowed(v, table) for v in _vars(values).ravel()], dtype=object).reshape(shape)
    return _array(narrowed).apply(table).quantize(k, i, f)


def _narrowed(value, table, most: int = 1 << 22):
    """`value` (a da4ml variable) truncated to the fewest fraction bits, then saturated to the fewest integer bits,
    that give every value it can take the same table entry (checked on all of them); as it is if it can take more
    than `most` values."""
    low, high, step = (float(v) for v in value.qint)
    count = round((high - low) / step) + 1
    if count > most or count < 2:
        return value
    grid = low + step * np.arange(count)
    wanted, sign, fraction = table(grid), int(low < 0), int(round(-np.log2(step)))
    top = int(np.ceil(np.log2(max(abs(low), high + step))))  # integer bits that hold every value

    def same(i: int, f: int) -> bool:
        return np.array_equal(table(_rounded(grid, sign, i, f, quantizing=False, saturate=True)), wanted)

    kept = next(f for f in range(-top, fraction + 1) if same(top, f))
    bits = next(i for i in range(-kept + 1 - sign, top + 1) if same(i, kept))
    if (bits, kept) == (top, fraction):
        return value
    return value.quantize(sign, bits, kept, "SAT", "TRN")


def _rounded(values, k: int, i: int, f: int, quantizing: bool, saturate: bool = False) -> np.ndarray:
    """`values` (numbers) in the type (k, i, f): rounded half to even and saturated (`quantizing`), else truncated
    and wrapped (or saturated, `saturate`)."""
    steps = np.asarray(values, np.float64) * 2.0**f
    low, high = (-(2.0 ** (i + f)) if k else 0.0), 2.0 ** (i + f) - 1
    if quantizing:
        steps = np.clip(np.round(steps), low, high)
    elif saturate:
        steps = np.clip(np.floor(steps), low, high)
    else:
        steps = np.mod(np.floor(steps) - low, 2.0 ** (k + i + f)) + low
    return steps * 2.0**-f


def quantized(values, fixed):
    """`values` of the type `fixed`: rounded to nearest even and saturated where it quantizes as QKeras does
    (`FixedType.quantizing`), else truncated and wrapped (ap_fixed's defaults)."""
    k, i, f = kif_of(fixed)
    if not fixed.quantizing:
        return values.quantize(k, i, f, "WRAP", "TRN")
    return _round_to_even(values, k, i, f)


def _round_to_even(values, k: int, i: int, f: int):
    """Round half to even, then saturate. da4ml rounds half up or truncates only, so: truncate after adding half a
    step less one input step, plus one input step where the kept part is odd (value by value, since each value's
    own fraction bits decide)."""
    out = []
    for value in _vars(values).ravel():
        fraction = int(value.kif[2])
        if fraction > f:
            odd = value.quantize(0, 1 - f, f, "WRAP", "TRN")  # the kept part's lowest bit, worth 2^-f
            value = value + (2.0 ** (-f - 1) - 2.0**-fraction) + odd * 2.0 ** (f - fraction)
        out.append(value.quantize(k, i, f, "SAT", "TRN"))
    return _array(np.array(out, dtype=object).reshape(values.shape))


def _vars(array) -> np.ndarray:
    """The object array of da4ml variables under a `FixedVariableArray`."""
    return array._vars if hasattr(array, "_vars") else np.asarray(array, dtype=object)


def _array(values, like=None):
    """A `FixedVariableArray` of da4ml variables (an object array, or one already)."""
    from da4ml.trace import FixedVariableArray, HWConfig

    if hasattr(values, "_vars"):
        return values
    return FixedVariableArray(np.asarray(values, dtype=object), SOLVER_OPTIONS, hwconf=HWConfig(1, -1, -1))


def _flat_array(source):
    return _array(_vars(source).reshape(-1))


def _stacked(outputs) -> np.ndarray:
    return np.stack([_vars(out).reshape(-1) for out in outputs])
