"""An exact fixed-point emulation of a model's record, in numpy, of what the RTL computes (`logic.py` layer by
layer): sums of products in float64 (exact for these widths: every value is on a power-of-two grid and under 2^53),
each quantizer rounding and overflowing as its type says. The RTL's simulation must equal it bit for bit
(`check_against_emulation`); so must da4ml's own software emulation of the logic, which is checked against the
RTL, never used in its place."""

import numpy as np

from fpgaprune.errors import FpgapruneError
from fpgaprune.rtl.logic import PASSING, kif_of


class RtlMismatch(FpgapruneError):
    """The RTL's simulation differs from the record's fixed-point emulation: one line saying where it starts."""


def emulate(record, input_fixed, x) -> dict:
    """{layer: its outputs (samples, values)} for inputs `x` (flat, channels last) of the type `input_fixed`."""
    values = {}
    start = fixed_point(np.asarray(x, np.float64).reshape(len(x), -1), input_fixed, quantizing=False)
    for name in record.topological():
        layer = record.layers[name]
        values[name] = _layer(layer, values[layer.inbound[0]] if layer.inbound else start)
    return values


def _layer(layer, values: np.ndarray) -> np.ndarray:
    if layer.kind == "Dense":
        out = values @ np.asarray(layer.kernel.quantized, np.float64)
        if layer.use_bias:
            out = out + np.asarray(layer.weights["bias"].quantized, np.float64)
        return _activated(layer.activation, out)
    if layer.applies is not None:
        return _activated(layer.applies, values)
    if layer.role in ("Activation", "ReLU"):
        return _activated(layer.activation, values, relu=layer.activation is None)
    if layer.role in PASSING:
        return values
    raise FpgapruneError(f"layer '{layer.name}': no emulation of a {layer.class_name}")


def _activated(activation, values: np.ndarray, relu: bool = False) -> np.ndarray:
    if activation is not None and activation.quantizer and activation.fixed is not None:
        if activation.relu and activation.fixed.signed:
            values = np.maximum(values, 0.0)
        return fixed_point(values, activation.fixed, activation.fixed.quantizing)
    if relu or (activation is not None and activation.name == "relu"):
        return np.maximum(values, 0.0)
    return values


def fixed_point(values: np.ndarray, fixed, quantizing: bool) -> np.ndarray:
    """`values` in the type `fixed`: rounded half to even and saturated (`quantizing`), else truncated and wrapped."""
    sign, integer, frac = kif_of(fixed)
    steps = values * 2.0**frac
    low, high = (-(2.0 ** (integer + frac)) if sign else 0.0), 2.0 ** (integer + frac) - 1
    if quantizing:
        steps = np.clip(np.round(steps), low, high)
    else:
        steps = np.mod(np.floor(steps) - low, 2.0 ** (sign + integer + frac)) + low
    return steps * 2.0**-frac


def check_against_emulation(record, input_fixed, xq, outputs, where: str, logic=None) -> None:
    """One RtlMismatch line unless the RTL's `outputs` for the hardware inputs `xq` equal the record's emulation
    (and, given `logic`, da4ml's own emulation of it equals the RTL): the first sample and output that differ."""
    expected = emulate(record, input_fixed, xq)[record.outputs[-1]].reshape(len(xq), -1)
    found = np.asarray(outputs, np.float64).reshape(expected.shape)
    _same(found, expected, f"the RTL of {where} differs from the record's fixed-point emulation")
    if logic is not None:
        library = np.asarray(logic.predict(np.asarray(xq, np.float64).reshape(len(xq), -1)), np.float64)
        _same(library.reshape(found.shape), found, f"da4ml's emulation of {where} differs from its RTL")


def _same(found: np.ndarray, expected: np.ndarray, what: str) -> None:
    differs = np.argwhere(found != expected)
    if differs.size:
        sample, output = (int(v) for v in differs[0])
        raise RtlMismatch(
            f"{what} at output {output} of sample {sample} ({found[sample, output]:g} against "
            f"{expected[sample, output]:g}; {len(differs)} values differ)"
        )
