"""Which weights of which layer class can be held, as data (in the manner of tfmot's prune_registry).

Each maskable weight names the layer attribute that holds its variable and the constructor argument whose
constraint the optimizer applies after every update; that constraint is where fpgaprune's hold lives.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class MaskableWeight:
    name: str  # the short name users write: conv2/kernel, lstm/recurrent_kernel
    attribute: str  # dotted attribute path on the layer: "kernel", "cell.recurrent_kernel"
    constraint_key: str  # the layer config key of its constraint: "kernel_constraint"
    quantizer: str  # the QKeras attribute of its quantizer, on the same object: "kernel_quantizer_internal"

    def owner(self, layer):
        """The object that holds the variable: the layer, or its recurrent cell."""
        return layer.cell if self.attribute.startswith("cell.") else layer

    def variable(self, layer):
        """The layer's variable for this weight (None when absent, e.g. a bias with use_bias=False)."""
        return getattr(self.owner(layer), self.name, None)

    def quantizer_of(self, layer):
        """The QKeras quantizer of this weight, or None for a float layer."""
        return getattr(self.owner(layer), self.quantizer, None)


def _w(name: str, constraint_key: str, on_cell: bool = False) -> MaskableWeight:
    quantizer = "kernel_quantizer_internal" if name == "kernel" else f"{name.replace('_kernel', '')}_quantizer_internal"
    return MaskableWeight(name, f"cell.{name}" if on_cell else name, constraint_key, quantizer)


_CONV_DENSE = (_w("kernel", "kernel_constraint"), _w("bias", "bias_constraint"))
_DEPTHWISE = (_w("depthwise_kernel", "depthwise_constraint"), _w("bias", "bias_constraint"))
_SEPARABLE = (
    _w("depthwise_kernel", "depthwise_constraint"),
    _w("pointwise_kernel", "pointwise_constraint"),
    _w("bias", "bias_constraint"),
)
_RECURRENT = (
    _w("kernel", "kernel_constraint", on_cell=True),
    _w("recurrent_kernel", "recurrent_constraint", on_cell=True),
    _w("bias", "bias_constraint", on_cell=True),
)

MASKABLE_WEIGHTS: dict[str, tuple[MaskableWeight, ...]] = {
    "Conv1D": _CONV_DENSE,
    "Conv2D": _CONV_DENSE,
    "Dense": _CONV_DENSE,
    "DepthwiseConv2D": _DEPTHWISE,
    "SeparableConv2D": _SEPARABLE,
    "LSTM": _RECURRENT,
    "GRU": _RECURRENT,
    "QConv1D": _CONV_DENSE,
    "QConv2D": _CONV_DENSE,
    "QDense": _CONV_DENSE,
    "QDepthwiseConv2D": _DEPTHWISE,
    "QSeparableConv2D": _SEPARABLE,
    "QLSTM": _RECURRENT,
    "QGRU": _RECURRENT,  # runs on TF 2.21 thanks to the aliases in fpgaprune.tfk
}

# The weight a bare layer name refers to (`conv2[...]`). SeparableConv2D has two kernels, so it has none.
_DEFAULT_WEIGHT = {"DepthwiseConv2D": "depthwise_kernel", "QDepthwiseConv2D": "depthwise_kernel"}
_NO_DEFAULT = {"SeparableConv2D", "QSeparableConv2D"}


def maskable_weights(class_name: str) -> tuple[MaskableWeight, ...] | None:
    """The maskable weights of a layer class, or None when the class is not supported."""
    return MASKABLE_WEIGHTS.get(class_name)


def default_weight(class_name: str) -> str | None:
    """The weight that `layer[...]` without a variable name means, or None when it must be named."""
    if class_name in _NO_DEFAULT:
        return None
    return _DEFAULT_WEIGHT.get(class_name, "kernel")


def supported_classes() -> str:
    return ", ".join(MASKABLE_WEIGHTS)
