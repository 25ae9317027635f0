"""The types of an HGQ2 model's kernel layers before hls4ml converts it, for pricing kernels (a budget), as
hls4ml's BitExact pass gives them: the kernel array's narrowest exact type, the input's from the layer's input
quantizer (its widest value), and an accumulator that holds every sum of those inputs times the quantized weights.
The export itself is typed by BitExact (`hls.convert_model`); these only price it beforehand."""

import numpy as np

from fpgaprune.frontends.hgq2.quantizers import is_hgq2, quantized
from fpgaprune.frontends.tensorflow.graph import input_name
from fpgaprune.hls.precision.plan import PrecisionPlan, column_bounds
from fpgaprune.layer_kinds import kind_of
from fpgaprune.quantize.fixed_types import FixedType, ValueRange, input_type


def hardware_types(model) -> PrecisionPlan:
    """{layer: {"weight", "input", "accum"}} for each HGQ2 layer whose products the export generates; a note for
    one without an input quantizer (its input type is the layer before's, which this does not trace)."""
    plan = PrecisionPlan(input_name(model))
    for layer in model.layers:
        if not (is_hgq2(layer) and getattr(kind_of(layer), "kernel_sparse", False)):
            continue
        source = input_range(layer)
        if source is None:
            plan.notes.append(f"{layer.name}: no HGQ2 input quantizer, so no input type before conversion")
            continue
        kernel = quantized(layer, "kernel", layer.kernel.numpy())
        columns = kernel.reshape(-1, kernel.shape[-1])
        bias = quantized(layer, "bias", layer.bias.numpy()) if getattr(layer, "bias", None) is not None else 0.0
        weight = input_type(kernel)
        bias_frac = input_type(np.atleast_1d(bias)).frac
        lower, upper = column_bounds(columns, bias, source)
        accum = FixedType.covering(float(lower.min()), float(upper.max()), max(weight.frac + source.frac, bias_frac))
        plan.types[layer.name] = {
            "weight": weight,
            "input": FixedType.covering(source.lo, source.hi, source.frac),
            "accum": accum,
        }
    return plan


def input_range(layer) -> ValueRange | None:
    """The widest range and finest grid of the layer's input quantizer (over the values it keeps any bit of), or
    None where it has none."""
    iq = getattr(layer, "iq", None) if getattr(layer, "enable_iq", False) else None
    if iq is None:
        return None
    k, i, f = (np.asarray(v, np.float64) for v in iq.quantizer.kif)
    kept = np.broadcast_to(k + i + f > 0, f.shape)
    frac = int(np.max(f[kept])) if kept.any() else 0
    return ValueRange(float(np.min(np.asarray(iq.quantizer.min))), float(np.max(np.asarray(iq.quantizer.max))), frac)
