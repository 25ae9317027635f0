"""Brevitas injectors with QKeras' fixed-point semantics and a constant power-of-two scale (not learned, not
from statistics). Brevitas' scale is `2**ceil(log2(const)) / 2**(bits-1)` (signed) or `/ 2**bits` (unsigned), so
a constant of `2**integer` gives QKeras' step: `quantized_bits(bits, integer)` and `quantized_relu(bits,
integer)`, measured equal bit for bit on 10^5 values, ties and saturation included."""

from brevitas.core.function_wrapper import TensorClampSte
from brevitas.inject.enum import RestrictValueType, ScalingImplType, ScalingPerOutputType
from brevitas.quant.fixed_point import (
    Int8ActPerTensorFixedPoint,
    Int8BiasPerTensorFixedPointInternalScaling,
    Int8WeightPerTensorFixedPoint,
    Uint8ActPerTensorFixedPoint,
)


class FixedWeight(Int8WeightPerTensorFixedPoint):
    """quantized_bits weights: signed, the full range [-2**(bits-1), 2**(bits-1) - 1] (not narrow)."""

    narrow_range = False
    scaling_impl_type = ScalingImplType.CONST
    restrict_scaling_type = RestrictValueType.POWER_OF_TWO
    scaling_per_output_type = ScalingPerOutputType.TENSOR
    bit_width = 8
    scaling_const = 1.0


class FixedBias(Int8BiasPerTensorFixedPointInternalScaling):
    """quantized_bits biases with a scale of their own (not the input's times the weight's)."""

    requires_input_scale = False
    narrow_range = False
    scaling_impl_type = ScalingImplType.CONST
    restrict_scaling_type = RestrictValueType.POWER_OF_TWO
    bit_width = 8
    scaling_const = 1.0


class FixedSignedAct(Int8ActPerTensorFixedPoint):
    """quantized_bits as an activation (QuantIdentity); its gradient passes where it saturates, as QKeras'."""

    scaling_impl_type = ScalingImplType.CONST
    restrict_scaling_type = RestrictValueType.POWER_OF_TWO
    tensor_clamp_impl = TensorClampSte
    bit_width = 8
    min_val = -1.0
    max_val = 1.0


class FixedRelu(Uint8ActPerTensorFixedPoint):
    """quantized_relu for QuantReLU: unsigned."""

    scaling_impl_type = ScalingImplType.CONST
    restrict_scaling_type = RestrictValueType.POWER_OF_TWO
    bit_width = 8
    max_val = 1.0
