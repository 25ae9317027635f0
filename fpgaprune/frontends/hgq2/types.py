"""The types of an HGQ2 model's kernel layers before hls4ml converts it, for pricing kernels (a budget), computed
as hls4ml's BitExact pass computes them, with its own helpers: the kernel array's minimal exact type (`minimal_kif`,
each of k, i, f the largest over its values), the input's from the layer's input quantizer, and the accumulator
from the interval of every output over those inputs (padded, im2col'd and strided as BitExact does). The export
itself is typed by BitExact (`hls.convert_model`); these only price it beforehand."""

import numpy as np

from fpgaprune.frontends.hgq2.quantizers import is_hgq2, quantized
from fpgaprune.frontends.tensorflow.graph import input_name
from fpgaprune.hls.precision.plan import PrecisionPlan
from fpgaprune.model.layer_kinds import kind_of
from fpgaprune.quantize.fixed_types import FixedType


def hardware_types(model) -> PrecisionPlan:
    """{layer: {"weight", "input", "accum"}} for each HGQ2 layer whose products the export generates; a note for
    one without an input quantizer (its input type is the layer before's, which this does not trace)."""
    from hls4ml.utils.qinterval import minimal_kif

    plan = PrecisionPlan(input_name(model))
    for layer in model.layers:
        if not (is_hgq2(layer) and getattr(kind_of(layer), "kernel_sparse", False)):
            continue
        kif = input_kif(layer)
        if kif is None:
            plan.notes.append(f"{layer.name}: no HGQ2 input quantizer, so no input type before conversion")
            continue
        kernel = quantized(layer, "kernel", layer.kernel.numpy())
        bias = quantized(layer, "bias", layer.bias.numpy()) if getattr(layer, "bias", None) is not None else 0.0
        plan.types[layer.name] = {
            "weight": _fixed(minimal_kif(kernel)),
            "input": _fixed(kif),
            "accum": _fixed(_accumulated(layer, kif, kernel, bias)),
        }
    return plan


def input_kif(layer) -> tuple | None:
    """(k, i, f) per input value (the batch axis dropped) of the layer's input quantizer, a value it keeps no bit
    of at (0, 0, 0); None where the layer has none, or one per input."""
    iq = lane_quantizer(layer)
    if iq is None or isinstance(layer.input, (list, tuple)):  # a merge (QAdd): a quantizer per input
        return None
    shape = tuple(layer.input.shape[1:])
    k, i, f = (np.broadcast_to(np.asarray(v, np.float64), (1, *shape))[0] for v in iq.quantizer.kif)
    kept = k + i + f > 0
    return tuple(np.where(kept, v, 0).astype(np.int16) for v in (k, i, f))


def lane_quantizer(layer):
    """The HGQ2 quantizer of a layer's input: its own `iq` where enabled, or a standalone `Quantizer` layer itself
    (quantizing its input is all it computes); None where it has none, one per input (a merge) or not fixed point."""
    from hgq.quantizer import Quantizer

    found = layer if isinstance(layer, Quantizer) else getattr(layer, "iq", None)
    if found is None or not (found is layer or getattr(layer, "enable_iq", False)):
        return None
    return found if hasattr(getattr(found, "quantizer", None), "kif") else None  # a merge's: one per input


def kernel_input_kif(layer) -> tuple | None:
    """(k, i, f) per row of the layer's kernel matrix, as hls4ml's distributed-arithmetic pass gives da4ml: the input
    quantizer's per-value types at each output position's window, each the largest over the positions; None where
    the layer has no input quantizer."""
    kif = input_kif(layer)
    if kif is None:
        return None
    rows = int(np.prod(layer.kernel.shape[:-1]))
    return tuple(v.reshape(-1, rows).max(axis=0) for v in _windows(layer, kif))


def _accumulated(layer, kif: tuple, kernel: np.ndarray, bias) -> tuple:
    """Each output's (k, i, f): its interval over every input the quantizer gives, as BitExact's `_produce_kif`."""
    from hls4ml.utils.qinterval import QIntervalArray

    interval = QIntervalArray.from_kif(*_windows(layer, kif)) @ kernel.reshape(-1, kernel.shape[-1])
    return (interval + bias).to_kif()


def _windows(layer, kif: tuple) -> tuple:
    """A convolution's per-value input types as each output position sees them: the input (padded) im2col'd and
    strided, as BitExact does; a Dense layer's as they are."""
    from hls4ml.model.optimizer.passes.bit_exact import im2col

    if len(layer.kernel.shape) <= 2:
        return kif
    kif = im2col(layer.kernel.shape, *(_padded(layer, v) for v in kif))
    return tuple(v[tuple(slice(None, None, s) for s in layer.strides)] for v in kif)


def _padded(layer, values: np.ndarray) -> np.ndarray:
    """Keras' 'same' padding (zeros, split as TensorFlow splits it) of one input array (spatial axes first)."""
    if getattr(layer, "padding", "valid") != "same":
        return values
    pads = []
    for size, window, stride in zip(values.shape[:-1], layer.kernel_size, layer.strides):
        total = max((-(-size // stride) - 1) * stride + window - size, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(values, (*pads, (0, 0)))


def _fixed(kif: tuple) -> FixedType:
    """hls4ml's type of (k, i, f) arrays: each of them the largest over the values (`kif_arrs_to_ints`)."""
    k, i, f = (int(np.max(v)) for v in kif)
    return FixedType(max(k + i + f, 1), k + i, bool(k))
