"""What a front end reads of its framework for its own code: the graph, the weights, the holds and the quantizers
that `describe` turns into fpgaprune's record (`frontends/describe.py`), strip and the reference copy. Nothing
outside `frontends/` asks these: the rest of fpgaprune reads the record (`record/model_record.py`), so they are
not the contract (`contract/__init__.PROTOCOLS`), and a front end may answer them as its framework needs.
"""

from abc import ABC, abstractmethod

import numpy as np

from fpgaprune.errors import ModelTypeError, QuantizationConfigError
from fpgaprune.frontends.layer_reading import variable_of


class FrameworkReading(ABC):
    """What `describe` and the front ends' shared code read of a framework."""

    float32_reference: bool = True  # the quantized model computes in float32 (its sums round past 24 bits)
    WEIGHT_ROLES: tuple = ("kernel",)  # the weight roles whose pruned entries a quantizer must keep at 0
    DEFAULT_QUANTIZERS: dict = {}  # the quantizer texts a run uses unless its config names others
    quantizes: bool = False  # whether its models train with quantizers themselves (else through a twin)

    @abstractmethod
    def array(self, variable):
        """A weight as a numpy array, in fpgaprune's layout (a kernel's input axes first, its outputs last)."""

    def layers(self, model) -> list:
        """The model's layers in order, each with a `name` and its weights as the attributes its kind names (a
        framework whose layers lack these presents views of them)."""
        return list(model.layers)

    def output_shape(self, model) -> tuple:
        """The model's output shape, batch first, for a framework whose models do not carry it."""
        raise AttributeError(f"{type(model).__name__} has no output_shape")

    def own_weight_name(self, name: str) -> str:
        """The framework's name for fpgaprune's weight `name` where it differs (PyTorch's `weight`), else ""."""
        return ""

    def get_layer(self, model, name: str):
        return next(layer for layer in self.layers(model) if layer.name == name)

    @abstractmethod
    def graph_edges(self, model) -> tuple:
        """The model as a graph of layers: (its layers in order, each with a `name` and its weights as the
        attributes its kind names; {layer name: the names of the layers it reads}; the output layers' names)."""

    def index_shape(self, layer, weight) -> tuple:
        """The shape a selection's index addresses: the weight in the framework's own layout."""
        return tuple(variable_of(weight, layer).shape)

    def index_layout(self, layer) -> tuple | None:
        """How the user's layout of the layer's kernel maps to fpgaprune's, axis by axis; None: the same."""
        return None

    def to_fpgaprune_layout(self, layer, weight, mask):
        """A boolean mask in the framework's layout (`index_shape`) in fpgaprune's (a kernel's outputs last)."""
        return mask

    def hold_constraint(self):
        """The class its holds are made with (`fp.HoldConstraint` for tf_keras), or None."""
        return None

    @abstractmethod
    def hold_of(self, variable):
        """The hold (`masking.held.HeldEntries`) a weight carries, or None."""

    @abstractmethod
    def input_name(self, model) -> str:
        """The name of the model's input node in hls4ml's IR."""

    def keras(self):
        """The Keras module its models are built with (tf_keras, Keras 3), for the stages that rebuild Keras
        models (strip, the built-in networks); one line where its models are not Keras models."""
        raise ModelTypeError(f"{self.name} models are not Keras models")

    def restore_quantizer(self, layer, restored) -> None:
        """Give the weights `restored` (a mask of the kernel) back their quantizer's bits (HGQ2 learns per-weight
        bits, and a removed weight's are 0); nothing for quantizers of fixed width."""

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

        return np.asarray(values, np.float64)

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

    def quantizer_curve(self, quantizer) -> dict:
        """What an activation quantizer computes before it rounds, as `ActivationRecord` fields: {"curve": "tanh"}
        (a real function), {"line": (slope, offset)} (a hard one), or {} (it only rounds)."""
        return {}

    def quantizer_range(self, quantizer) -> tuple[float, float] | None:
        """[lo, hi] of what a quantizer outputs, where its type does not say (None: measured on a ramp)."""
        return None

    def input_quantizer(self, layer):
        """The layer's own quantizer of its input, value by value (`record.InputQuantizer`: its types per value and
        per kernel row, as hls4ml's DA pass gives da4ml, and its modes); None where the layer has none."""
        return None

    def quantizer_bits(self, layer, role: str, default: int = 32) -> int:
        """The bit width of a layer's quantizer for `role` (`default` for a float weight)."""
        return default

    def has_channel_scale(self, quantizer) -> bool:
        """Whether the quantizer scales each output channel (hls4ml factors it into a `<layer>_alpha` node)."""
        return False

    def pruned_values(self, quantizer, values, pruned):
        """What the quantizer makes of the `pruned` entries (set to 0) of a weight whose other entries are
        `values`."""

        return np.zeros(int(np.count_nonzero(pruned)))

    def unit_quantizer(self, quantizer):
        """A quantizer with per-channel scales (`has_channel_scale`) as it is at scale 1 (hls4ml's grid)."""
        return quantizer

    def factor_scales(self, quantizer, values):
        """(the grid values, the per-output-channel scales) hls4ml factors a scaled weight into."""
        raise QuantizationConfigError(f"{self.name} quantizers have no per-channel scales")

    def build_quantizer(self, text: str, where: str):
        """Its quantizer for one of fpgaprune's quantizer texts (`quantize/spec.py`); one line naming `where`."""
        raise QuantizationConfigError(f"{where}: {self.name} takes no quantizer texts")

    def is_quantized(self, layer) -> bool:
        """Whether the layer's weights or activations are quantized."""
        return False

    def quantizer_type(self, quantizer, activation: bool = False):
        """The fixed-point type (`quantize.fixed_types.FixedType`) of a quantizer's outputs, or None."""
        return None

    def zero_of(self, quantizer) -> float:
        """What the quantizer makes of a weight that is 0 (a pruned weight needs 0.0)."""
        return 0.0

    def quantize_array(self, quantizer, values):
        """`values` through `quantizer`, as float64 (the numerical profile's ramp)."""

        return np.asarray(values, np.float64)
