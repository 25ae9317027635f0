"""An exact fixed-point emulation of a model's record, in numpy, of what the RTL computes: sums of products in
float64 (exact for these widths: every value is on a power-of-two grid and under 2^53), each quantizer rounding and
overflowing as its type says. It shares only the geometry of the windows with `logic.py` (which taps an output
position reads) and the curves of table activations; the arithmetic is its own. The RTL's simulation must equal it
bit for bit, layer by layer (`check_stages`, `check_against_emulation`); so must da4ml's own software emulation of
the logic, which is checked against the RTL, never used in its place."""

import numpy as np

from fpgaprune.errors import FpgapruneError
from fpgaprune.rtl.logic import (
    CURVES,
    FLATTENING,
    PASSING,
    POOLINGS,
    WindowGeometry,
    channels_first,
    flat_order,
    flattens,
    input_map,
    is_window,
    kif_of,
    quantizes_only,
)

INPUT = "<input>"  # the emulated maps' key of the quantized input


class RtlMismatch(FpgapruneError):
    """The RTL's simulation differs from the record's fixed-point emulation: one line saying where it starts."""


def emulate(record, input_fixed, x, shape=None) -> dict:
    """{layer: its output maps (samples, height, width, channels)} for inputs `x` (channels last; a map of `shape`,
    by default its record's) of the type `input_fixed`."""
    order = record.topological()
    shape = shape or input_map(record)
    start = fixed_point(np.asarray(x, np.float64).reshape(len(x), *shape), input_fixed, quantizing=False)
    maps, first = {INPUT: start}, channels_first(record)
    for name in order:
        layer = record.layers[name]
        maps[name] = _layer(layer, [maps[source] for source in layer.inbound] or [start], first)
    return maps


def _layer(layer, sources, first: bool) -> np.ndarray:
    if layer.role == "Add":
        return np.sum(sources, axis=0)
    if layer.role == "Concatenate":
        return np.concatenate(sources, axis=-1)
    source = sources[0]
    if layer.role in FLATTENING or (is_window(layer) and flattens(layer, source.shape[1:])):
        source = source.reshape(len(source), -1)[:, flat_order(source.shape[1:], first)].reshape(len(source), 1, 1, -1)
        if layer.role in FLATTENING:
            return source
    if layer.input_quantizer is not None:
        source = _input_quantized(layer.input_quantizer, source)
    if is_window(layer):
        return _window(layer, source)
    if layer.role in PASSING or quantizes_only(layer):
        return source
    if layer.applies is not None:
        return _activated(layer.applies, source)
    if layer.batchnorm is not None:
        return source * layer.batchnorm.quantized_scale + layer.batchnorm.quantized_bias
    if layer.role in ("Activation", "ReLU"):
        return _activated(layer.activation, source, relu=layer.activation is None)
    raise FpgapruneError(f"layer '{layer.name}': no emulation of a {layer.class_name}")


def _window(layer, source: np.ndarray) -> np.ndarray:
    """A convolution, pooling or Dense layer at every output position of `source` (samples, h, w, c)."""
    geometry = WindowGeometry(layer, source.shape[1:])
    by_position = np.moveaxis(source, 0, 2)  # (h, w, samples, c): a tap is (samples, c)
    outputs = []
    for y in range(geometry.out_height):
        for x in range(geometry.out_width):
            taps, places = geometry.taps(by_position, y, x)
            outputs.append(_at_position(layer, np.asarray(taps, np.float64), places))
    out = np.stack(outputs, axis=1)  # (samples, positions, outputs)
    return _activated(layer.activation, out.reshape(len(source), geometry.out_height, geometry.out_width, -1))


def _at_position(layer, taps: np.ndarray, places) -> np.ndarray:
    """One position: `taps` (taps, samples, channels) to (samples, outputs)."""
    if layer.role in POOLINGS:
        return np.mean(taps, axis=0) if layer.role.startswith("Average") else np.max(taps, axis=0)
    channels = taps.shape[2]
    weights = {name: np.asarray(w.quantized, np.float64) for name, w in layer.weights.items()}
    if "depthwise_kernel" in weights:
        spread = weights["depthwise_kernel"]
        spread = spread.reshape(1, *spread.shape) if spread.ndim == 3 else spread
        picked = np.stack([spread[r, c] for r, c in places])  # (taps, channels, multiplier)
        out = np.einsum("tsc,tcm->scm", taps, picked).reshape(taps.shape[1], -1)
        if "pointwise_kernel" in weights:
            out = out @ weights["pointwise_kernel"].reshape(out.shape[1], -1)
    else:
        kernel = weights["kernel"]
        kernel = kernel.reshape(1, 1, channels, -1) if layer.kind == "Dense" else kernel
        kernel = kernel.reshape(1, *kernel.shape) if kernel.ndim == 3 else kernel
        picked = np.stack([kernel[r, c] for r, c in places])  # (taps, channels, outputs)
        out = np.einsum("tsc,tco->so", taps, picked)
    return out + weights["bias"] if "bias" in weights else out


def _activated(activation, values: np.ndarray, relu: bool = False) -> np.ndarray:
    if activation is not None and activation.quantizer and activation.fixed is not None:
        if activation.curve is not None:  # its curve, value by value (the RTL: a table of it)
            values = CURVES[activation.curve](values)
        elif activation.line is not None:
            values = values * activation.line[0] + activation.line[1]
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


def _input_quantized(quantizer, values: np.ndarray) -> np.ndarray:
    """Maps (samples, ...) through a layer's own input quantizer, value by value (HGQ2's `iq`): (k, i, f) of each
    value, rounded (TRN: down; RND: half up) and overflowing (WRAP, SAT, SAT_SYM) as its modes say."""
    shape = values.shape
    k, i, f = (np.asarray(v, np.float64).reshape(shape[1:]) for v in (quantizer.k, quantizer.i, quantizer.f))
    steps = np.floor(values * 2.0**f + (0.5 if quantizer.round_mode == "RND" else 0.0))
    low, high = -k * 2.0 ** (i + f), 2.0 ** (i + f) - 1
    if quantizer.overflow_mode == "WRAP":
        steps = np.mod(steps - low, 2.0 ** (k + i + f)) + low
    else:
        steps = np.clip(steps, np.where(k > 0, -high, 0.0) if quantizer.overflow_mode == "SAT_SYM" else low, high)
    return np.where(k + i + f > 0, steps * 2.0**-f, 0.0)


def check_against_emulation(record, input_fixed, xq, outputs, where: str, logic=None, shape=None) -> None:
    """One RtlMismatch line unless the RTL's `outputs` for the hardware inputs `xq` equal the record's emulation
    (and, given `logic`, da4ml's own emulation of it equals the RTL): the first sample and output that differ."""
    expected = emulate(record, input_fixed, xq, shape)[record.outputs[-1]].reshape(len(xq), -1)
    found = np.asarray(outputs, np.float64).reshape(expected.shape)
    _same(found, expected, f"the RTL of {where} differs from the record's fixed-point emulation")
    if logic is not None:
        library = np.asarray(logic.predict(np.asarray(xq, np.float64).reshape(len(xq), -1)), np.float64)
        _same(library.reshape(found.shape), found, f"da4ml's emulation of {where} differs from its RTL")


def check_stages(record, input_fixed, xq, traced: list, stages, where: str) -> None:
    """One RtlMismatch line naming the first stage (its layers) whose simulated beats differ from the emulation's
    (`traced`: per stage, (samples, beats, values)), with the sample, position and value where it starts."""
    maps = emulate(record, input_fixed, xq, stages[0].fed_shape)
    for stage, found in zip(stages, traced):
        if stage.kind == "gather":  # the map it reads, flattened in its order
            source = maps[stage.source or INPUT].reshape(len(xq), -1)
            expected = source[:, stage.order].reshape(len(xq), 1, -1)
        elif stage.kind == "pad":  # the map it reads, with its zeros
            top, left, bottom, right = stage.pad
            k, i, _ = stage.in_kifs  # a max pooling's padding: each value's least
            fill = np.where(np.asarray(k) > 0, -(2.0 ** np.asarray(i, np.float64)), 0.0) if stage.lowest else 0.0
            source = maps[stage.source or INPUT] - fill
            padded = np.pad(source, ((0, 0), (top, bottom), (left, right), (0, 0))) + fill
            expected = padded.reshape(len(xq), stage.beats, -1)
        else:
            expected = maps[stage.layers[-1]].reshape(len(xq), stage.beats, -1)
        if found.shape != expected.shape:
            raise RtlMismatch(
                f"the RTL of {where}: stage of {', '.join(stage.layers)} gave {found.shape[1]} beats of "
                f"{found.shape[2]} values per sample, the emulation {expected.shape[1]} of {expected.shape[2]}"
            )
        differs = np.argwhere(found != expected)
        if differs.size:
            sample, beat, value = (int(v) for v in differs[0])
            raise RtlMismatch(
                f"the RTL of {where} differs from the record's fixed-point emulation from layer "
                f"'{stage.layers[-1]}' on (its stage: {', '.join(stage.layers)}): sample {sample}, position {beat}, "
                f"value {value} ({found[sample, beat, value]:g} against {expected[sample, beat, value]:g}; "
                f"{len(differs)} values differ)"
            )


def _same(found: np.ndarray, expected: np.ndarray, what: str) -> None:
    differs = np.argwhere(found != expected)
    if differs.size:
        sample, output = (int(v) for v in differs[0])
        raise RtlMismatch(
            f"{what} at output {output} of sample {sample} ({found[sample, output]:g} against "
            f"{expected[sample, output]:g}; {len(differs)} values differ)"
        )
