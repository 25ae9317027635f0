"""hls4ml types for (unfolded) QBatchNormalization layers."""

import numpy as np

from fpgaprune.hls.precision.plan import PrecisionPlan
from fpgaprune.quantize.fixed_types import FixedType, ValueRange, exact_frac
from fpgaprune.record.model_record import LayerRecord

# Significant bits kept for a scale that is not on a short grid (QKeras computes it in float).
SCALE_BITS = 16


def batchnorm_types(plan: PrecisionPlan, layer: LayerRecord, current: ValueRange) -> None:
    """hls4ml computes x * scale + bias per channel, with scale = gamma / sqrt(var + eps) and bias = beta -
    mean * scale from the float parameters. The product is exact with `result` = input frac + scale frac;
    scale and bias are exact when they sit on a grid of at most 2^-24, else kept to SCALE_BITS bits."""
    scale, bias = batchnorm_affine(layer, quantized=False)
    scale_frac = exact_frac(scale)
    exact = scale_frac is not None
    if not exact:
        smallest = np.abs(scale[scale != 0]).min() if np.any(scale != 0) else 1.0
        scale_frac = SCALE_BITS - 1 - int(np.floor(np.log2(smallest)))
    frac = current.frac + scale_frac
    bias_frac = exact_frac(bias)
    if not exact or bias_frac is None or bias_frac > frac:
        plan.notes.append(
            f"{layer.name}: batch-norm scale and bias are not on a short fixed grid; scale kept to "
            f"2^-{scale_frac}, bias to 2^-{frac}, so C-sim can differ from QKeras by rounding"
        )
    lower = np.minimum(scale * current.lo, scale * current.hi) + bias
    upper = np.maximum(scale * current.lo, scale * current.hi) + bias
    plan.types[layer.name] = {
        "scale": FixedType.covering(float(scale.min()), float(scale.max()), scale_frac),
        "bias": FixedType.covering(float(bias.min()), float(bias.max()), frac),
        "result": FixedType.covering(float(lower.min()), float(upper.max()), frac),
    }
    plan.ranges[layer.name] = ValueRange(float(lower.min()), float(upper.max()), frac)
    quantized_scale, quantized_bias = batchnorm_affine(layer, quantized=True)
    if not (np.array_equal(scale, quantized_scale) and np.array_equal(bias, quantized_bias)):
        plan.notes.append(
            f"{layer.name}: hls4ml 1.3 ignores QBatchNormalization's gamma/beta/mean/variance "
            "quantizers, so its scale and bias differ from QKeras'"
        )


def batchnorm_affine(layer, quantized: bool) -> tuple[np.ndarray, np.ndarray]:
    """(scale, bias) of a batch normalization, from its layer's record: its float or (as the quantizing library
    uses them) quantized parameters."""
    batchnorm = layer.batchnorm
    return (batchnorm.quantized_scale, batchnorm.quantized_bias) if quantized else (batchnorm.scale, batchnorm.bias)
