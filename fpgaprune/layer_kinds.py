"""The layer kinds fpgaprune handles, in one table: for each Keras layer class and its QKeras twin, what is
maskable, which pruning structures apply, how strip rewires it, its quantizers, how its hls4ml precision is
derived, and whether the export makes it kernel-sparse.

The modules along the data path read this table (selection, pruning, strip, quantize, hls precision,
resources, inspection); adding a layer type starts here. The README's "Adding a layer type" says what else.
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


@dataclass(frozen=True)
class LayerKind:
    """One layer type: its float and QKeras classes and what each stage does with it."""

    float_class: str
    qkeras_class: str
    weights: tuple  # MaskableWeight: what a hold can mask or freeze
    structures: tuple = ()  # pruning structures that apply, the default first; () = pruned only when named
    default_weight: str | None = "kernel"  # what `layer[...]` without a weight name means (None: must be named)
    quantizers: tuple = ()  # (QKeras constructor argument, quantizer role) pairs
    precision: str = "linear"  # hls4ml types: "linear" (each kernel column one accumulation), "separable", "recurrent"
    channels: str = ""  # strip: the config key that sizes its output channels when they can be removed
    folds_batchnorm: bool = False  # a BatchNormalization right after it folds into its weights
    kernel_sparse: bool = False  # the export writes one product per live weight (fpgaprune's hls4ml pass)
    hls4ml_nodes: tuple = ()  # the classes in hls4ml.model.layers that hls4ml converts this kind into

    @property
    def classes(self) -> tuple:
        return self.float_class, self.qkeras_class


def _w(name: str, constraint_key: str, on_cell: bool = False) -> MaskableWeight:
    quantizer = "kernel_quantizer_internal" if name == "kernel" else f"{name.replace('_kernel', '')}_quantizer_internal"
    return MaskableWeight(name, f"cell.{name}" if on_cell else name, constraint_key, quantizer)


_LINEAR = (_w("kernel", "kernel_constraint"), _w("bias", "bias_constraint"))
_DEPTHWISE = (_w("depthwise_kernel", "depthwise_constraint"), _w("bias", "bias_constraint"))
_SEPARABLE = (_w("depthwise_kernel", "depthwise_constraint"), _w("pointwise_kernel", "pointwise_constraint"),
              _w("bias", "bias_constraint"))
_RECURRENT = (_w("kernel", "kernel_constraint", on_cell=True), _w("recurrent_kernel", "recurrent_constraint", True),
              _w("bias", "bias_constraint", on_cell=True))
_KERNEL_BIAS = (("kernel_quantizer", "kernel"), ("bias_quantizer", "bias"))
_RECURRENT_QUANTIZERS = (("kernel_quantizer", "kernel"), ("recurrent_quantizer", "recurrent"),
                         ("bias_quantizer", "bias"))
_CONV_STRUCTURES = ("kernel", "filter", "input_channel", "element")

KINDS = (
    LayerKind("Conv1D", "QConv1D", _LINEAR, _CONV_STRUCTURES, quantizers=_KERNEL_BIAS, channels="filters",
              folds_batchnorm=True, kernel_sparse=True, hls4ml_nodes=("Conv1D",)),
    LayerKind("Conv2D", "QConv2D", _LINEAR, _CONV_STRUCTURES, quantizers=_KERNEL_BIAS, channels="filters",
              folds_batchnorm=True, kernel_sparse=True, hls4ml_nodes=("Conv2D", "Conv2DBatchnorm")),
    LayerKind("Dense", "QDense", _LINEAR, ("element", "neuron", "input_channel", "block"), quantizers=_KERNEL_BIAS,
              channels="units", folds_batchnorm=True, kernel_sparse=True, hls4ml_nodes=("Dense",)),
    LayerKind("DepthwiseConv2D", "QDepthwiseConv2D", _DEPTHWISE, ("depthwise", "element"), "depthwise_kernel",
              (("depthwise_quantizer", "kernel"), ("bias_quantizer", "bias")), hls4ml_nodes=("DepthwiseConv2D",)),
    LayerKind("SeparableConv2D", "QSeparableConv2D", _SEPARABLE, default_weight=None, quantizers=(
        ("depthwise_quantizer", "kernel"), ("pointwise_quantizer", "kernel"), ("bias_quantizer", "bias")),
        precision="separable"),
    LayerKind("LSTM", "QLSTM", _RECURRENT, quantizers=_RECURRENT_QUANTIZERS, precision="recurrent"),
    LayerKind("GRU", "QGRU", _RECURRENT, quantizers=_RECURRENT_QUANTIZERS, precision="recurrent"),
)
BY_CLASS = {name: kind for kind in KINDS for name in kind.classes}
BY_HLS4ML_NODE = {name: kind for kind in KINDS for name in kind.hls4ml_nodes}


def kind_of(class_name: str) -> LayerKind | None:
    """The kind of a float or QKeras layer class, or None when fpgaprune does not handle it."""
    return BY_CLASS.get(class_name)


def kind_of_node(node) -> LayerKind | None:
    """The kind of an hls4ml node, by the nearest class of hls4ml's layer module in its MRO (backends wrap each
    node class, e.g. VitisConv2D, and hls4ml's pointwise pass subclasses Conv2D). That class names the kind
    exactly: hls4ml's DepthwiseConv1D, though derived from Conv1D, is not the Conv1D kind. None for a class the
    table does not name."""
    layer_class = next((c for c in type(node).__mro__ if c.__module__ == "hls4ml.model.layers"), None)
    return BY_HLS4ML_NODE.get(layer_class.__name__) if layer_class else None


def classes_where(predicate, qkeras: bool | None = None) -> tuple:
    """Layer classes whose kind satisfies `predicate`: float and QKeras (None), only QKeras (True), only float."""
    return tuple(name for kind in KINDS if predicate(kind) for name in kind.classes
                 if qkeras is None or (name == kind.qkeras_class) == qkeras)
