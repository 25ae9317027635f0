"""What a layer's quantizers are and compute: the types, widths, scales and zeros the stages after quantization
read."""

from abc import ABC, abstractmethod

from fpgaprune.errors import QuantizationConfigError


class Quantizers(ABC):
    """What a layer's quantizers are and compute."""

    @abstractmethod
    def weight_quantizer(self, layer, role: str):
        """The quantizer of one of a layer's weights by role (kernel, bias, recurrent, depthwise, pointwise), or
        None (a float weight)."""

    @abstractmethod
    def activation_quantizer(self, layer):
        """The quantizer a quantized activation layer applies, or None."""

    def folded(self, layer, role: str, values):
        """A weight as the layer computes with it before its quantizer: `values` themselves, or a fused layer's
        (QKeras' QConv2DBatchnorm) with its batch normalization folded in."""
        return values

    def quantized(self, layer, role: str, values):
        """`values` through the layer's quantizer for `role` (unchanged without one), as float64; a fused
        layer's folded first (`folded`)."""
        import numpy as np

        return np.asarray(values, np.float64)

    def is_quantized(self, layer) -> bool:
        """Whether the layer's weights or activations are quantized."""
        return False

    def quantizer_texts(self, layer) -> dict:
        """{weight role: its quantizer as the model's config writes it}, for the manifest."""
        return {}

    def is_quantized_activation(self, layer) -> bool:
        """Whether the layer is an activation quantizer of its own (QKeras' QActivation)."""
        return False

    def is_batchnorm(self, layer) -> bool:
        return False

    def table_function(self, layer) -> str | None:
        """The function hls4ml reads from a table for a quantized activation layer ("sigmoid", "tanh": QKeras'
        quantized_tanh with use_real_tanh, say), whose C-sim is then judged within the table's bound; None."""
        return None

    def quantizer_type(self, quantizer, activation: bool = False):
        """The fixed-point type (`quantize.fixed_types.FixedType`) of a quantizer's outputs, or None."""
        return None

    def quantizer_range(self, quantizer) -> tuple[float, float] | None:
        """[lo, hi] of what a quantizer outputs, where its type does not say (None: measured on a ramp)."""
        return None

    def kernel_input_types(self, layer):
        """(k, i, f) arrays, one entry per row of the layer's kernel matrix, where its inputs are typed value by
        value (the types hls4ml's DA pass gives da4ml); None where the layer's node has one input type."""
        return None

    def quantizer_bits(self, layer, role: str, default: int = 32) -> int:
        """The bit width of a layer's quantizer for `role` (`default` for a float weight)."""
        return default

    def has_channel_scale(self, quantizer) -> bool:
        """Whether the quantizer scales each output channel (hls4ml factors it into a `<layer>_alpha` node)."""
        return False

    def zero_of(self, quantizer) -> float:
        """What the quantizer makes of a weight that is 0 (a pruned weight needs 0.0)."""
        return 0.0

    def pruned_values(self, quantizer, values, pruned):
        """What the quantizer makes of the `pruned` entries (set to 0) of a weight whose other entries are
        `values`."""
        import numpy as np

        return np.zeros(int(np.count_nonzero(pruned)))

    def unit_quantizer(self, quantizer):
        """A quantizer with per-channel scales (`has_channel_scale`) as it is at scale 1 (hls4ml's grid)."""
        return quantizer

    def factor_scales(self, quantizer, values):
        """(the grid values, the per-output-channel scales) hls4ml factors a scaled weight into."""
        raise QuantizationConfigError(f"{self.name} quantizers have no per-channel scales")

    def quantize_array(self, quantizer, values):
        """`values` through `quantizer`, as float64 (the numerical profile's ramp)."""
        import numpy as np

        return np.asarray(values, np.float64)
