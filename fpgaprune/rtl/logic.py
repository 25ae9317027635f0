"""A model's record as da4ml's logic: its inputs of the input type, each Dense layer a constant-matrix product by
distributed arithmetic (a weight that is 0 makes no adder), each activation quantizer rounding and saturating as
its record's type says (QKeras' quantized_relu: to nearest even, saturating; a plain type: truncated, wrapping).
Read from the record alone: layer kinds and roles, quantized weights, activation types."""

import numpy as np

from fpgaprune.errors import ExportError

# hls4ml 1.3's distributed_arithmetic pass: da4ml's solver options, and HWConfig(1, -1, -1)
SOLVER_OPTIONS = {"hard_dc": 2, "search_all_decompose_dc": True}
PASSING = ("InputLayer", "Flatten", "Reshape", "Dropout")  # roles that leave a flat channels-last array as it is
WRITES = "Dense layers, their activations and quantizers, QActivation, ReLU, Flatten and Reshape"


def kif_of(fixed) -> tuple[int, int, int]:
    """da4ml's (sign, integer, fraction) bits of a `FixedType` (whose integer bits count the sign)."""
    sign = int(fixed.signed)
    return sign, fixed.integer - sign, fixed.frac


def network_logic(record, input_fixed):
    """da4ml's combinational logic of the whole network (`CombLogic`): the flat input (channels last) of type
    `input_fixed` to the last output layer's values. One ExportError line naming a layer it cannot write."""
    from da4ml.trace import FixedVariableArrayInput, HWConfig, comb_trace

    order = record.topological()
    first = record.layers[order[0]]
    size = int(np.prod(first.input_shape[1:] if first.input_shape else first.output_shape[1:]))
    inputs = FixedVariableArrayInput(size, HWConfig(1, -1, -1), solver_options=SOLVER_OPTIONS)
    values, start = {}, inputs.quantize(*kif_of(input_fixed))
    for name in order:
        layer = record.layers[name]
        if len(layer.inbound) > 1:
            raise ExportError(f"layer '{name}' ({layer.class_name}) reads {len(layer.inbound)} layers; {_later()}")
        values[name] = _layer(layer, values[layer.inbound[0]] if layer.inbound else start)
    return comb_trace(inputs, values[record.outputs[-1]])


def _layer(layer, values):
    """One layer's outputs from its inputs' (both flat)."""
    if layer.kind == "Dense":
        return _activated(layer, layer.activation, _dense(layer, values))
    if layer.applies is not None:  # QActivation: its quantizer
        return _activated(layer, layer.applies, values)
    if layer.role in ("Activation", "ReLU"):
        return _activated(layer, layer.activation or _Relu, values)
    if layer.role in PASSING:
        return values
    raise ExportError(f"layer '{layer.name}' ({layer.class_name}): the RTL backend writes {WRITES}; {_later()}")


def _later() -> str:
    return "convolutions, pooling and merges come in a later step of the RTL backend"


def _dense(layer, values):
    """`values @ kernel + bias` of the layer's quantized weights, on their exact grid."""
    kernel = np.asarray(layer.kernel.quantized, np.float64)
    if kernel.ndim != 2 or kernel.shape[0] != values.size:
        raise ExportError(
            f"layer '{layer.name}': a Dense kernel {kernel.shape} on {values.size} inputs (a flat input only)"
        )
    _check_grid(layer, kernel)
    out = values @ kernel
    if layer.use_bias:
        bias = np.asarray(layer.weights["bias"].quantized, np.float64)
        _check_grid(layer, bias)
        out = out + bias
    return out


def _check_grid(layer, array) -> None:
    """Weights on a power-of-two grid (da4ml's constants): one line where a scale makes them otherwise."""
    scaled = array * 2.0**24
    if not np.array_equal(scaled, np.round(scaled)):
        raise ExportError(
            f"layer '{layer.name}': weights off a power-of-two grid (a quantizer scale that is not a power of two); "
            "the RTL backend writes constants of fixed-point types"
        )


class _Relu:
    """A float ReLU (an Activation layer's or a ReLU layer's, where the record names none)."""

    name, quantizer, fixed, relu = "relu", False, None, True


def _activated(layer, activation, values):
    """`values` through the layer's activation: a quantizer of a fixed type, a float ReLU, or the identity."""
    if activation is None or (not activation.quantizer and activation.name in ("", "linear")):
        return values
    if activation.quantizer and activation.fixed is not None:
        if activation.relu and activation.fixed.signed:
            values = values.relu()
        return quantized(values, activation.fixed)
    if activation.name == "relu":
        return values.relu()
    raise ExportError(
        f"layer '{layer.name}': the RTL backend computes no {activation.name or activation.class_name} yet "
        "(a table activation comes in a later step); end the model before it, or quantize it"
    )


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
    from da4ml.trace import FixedVariableArray

    out = []
    for value in values._vars.ravel():
        fraction = int(value.kif[2])
        if fraction > f:
            odd = value.quantize(0, 1 - f, f, "WRAP", "TRN")  # the kept part's lowest bit, worth 2^-f
            value = value + (2.0 ** (-f - 1) - 2.0**-fraction) + odd * 2.0 ** (f - fraction)
        out.append(value.quantize(k, i, f, "SAT", "TRN"))
    return FixedVariableArray(np.array(out).reshape(values.shape), values.solver_options, hwconf=values.hwconf)
