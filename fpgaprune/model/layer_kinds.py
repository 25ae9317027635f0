"""The layer kinds fpgaprune handles, in one framework-neutral table: for each kind (Conv2D, Dense, LSTM, ...),
what is maskable, which pruning structures apply, how strip rewires it, which weights its quantizers quantize,
how its hls4ml precision is derived, and whether the export makes it kernel-sparse.

Each front end (`fpgaprune/frontends/`) binds its own layer classes to these kinds: tf_keras and QKeras classes,
Keras 3 classes. A layer is of a kind when a class in its MRO is bound to it, so a user's subclass of `Conv2D`
is a Conv2D. The modules along the data path read this table (selection, pruning, strip, quantize, hls
precision, resources, inspection); adding a layer type starts here (docs/extending.md, "Adding a layer type").
"""

from dataclasses import dataclass

from fpgaprune.framework import bind_all


@dataclass(frozen=True)
class MaskableWeight:
    name: str  # the short name users write: conv2/kernel, lstm/recurrent_kernel
    attribute: str  # dotted attribute path on the layer: "kernel", "cell.recurrent_kernel"
    constraint_key: str  # the layer config key of its constraint: "kernel_constraint"
    role: str  # what its quantizer is called by role: kernel, recurrent, bias, depthwise, pointwise

    def holder(self, layer):
        """The object that holds the variable: the layer, or its recurrent cell."""
        return layer.cell if self.attribute.startswith("cell.") else layer

    def variable(self, layer):
        """The layer's variable for this weight (None when absent, e.g. a bias with use_bias=False), under the
        attribute its framework gives it (Keras 3's DepthwiseConv2D calls its depthwise_kernel `kernel`)."""
        return getattr(self.holder(layer), attribute_of(layer, self.name), None)


@dataclass(frozen=True)
class LayerKind:
    """One layer type: what each stage does with it. Named after its float Keras class."""

    name: str
    weights: tuple  # MaskableWeight: what a hold can mask or freeze
    structures: tuple = ()  # pruning structures that apply, the default first; () = pruned only when named
    default_weight: str | None = "kernel"  # what `layer[...]` without a weight name means (None: must be named)
    quantizers: tuple = ()  # (weight role, the quantization spec's role that quantizes it) pairs
    precision: str = "linear"  # hls4ml types: "linear" (each kernel column one accumulation), "separable", "recurrent"
    channels: str = ""  # strip: the config key that sizes its output channels when they can be removed
    folds_batchnorm: bool = False  # a BatchNormalization right after it folds into its weights
    sparse_code: str = ""  # the kernel-sparse C++ the export writes ("dense", "conv"; "": hls4ml's stock code)
    hls4ml_nodes: tuple = ()  # the classes in hls4ml.model.layers that hls4ml converts this kind into

    @property
    def kernel_sparse(self) -> bool:
        """Whether the export writes one product per live weight: fpgaprune's hls4ml pass trims the weights and
        the backend's templates call the generated code, both by `sparse_code`, so they cannot disagree."""
        return bool(self.sparse_code)


def _w(name: str, constraint_key: str, on_cell: bool = False) -> MaskableWeight:
    role = "kernel" if name == "kernel" else name.replace("_kernel", "")
    return MaskableWeight(name, f"cell.{name}" if on_cell else name, constraint_key, role)


_LINEAR = (_w("kernel", "kernel_constraint"), _w("bias", "bias_constraint"))
_DEPTHWISE = (_w("depthwise_kernel", "depthwise_constraint"), _w("bias", "bias_constraint"))
_SEPARABLE = (
    _w("depthwise_kernel", "depthwise_constraint"),
    _w("pointwise_kernel", "pointwise_constraint"),
    _w("bias", "bias_constraint"),
)
_RECURRENT = (
    _w("kernel", "kernel_constraint", on_cell=True),
    _w("recurrent_kernel", "recurrent_constraint", True),
    _w("bias", "bias_constraint", on_cell=True),
)
_KERNEL_BIAS = (("kernel", "kernel"), ("bias", "bias"))
_RECURRENT_QUANTIZERS = (("kernel", "kernel"), ("recurrent", "recurrent"), ("bias", "bias"))
_CONV_STRUCTURES = ("kernel", "filter", "input_channel", "element")

KINDS = (
    LayerKind(
        "Conv1D",
        _LINEAR,
        _CONV_STRUCTURES,
        quantizers=_KERNEL_BIAS,
        channels="filters",
        folds_batchnorm=True,
        sparse_code="conv",
        hls4ml_nodes=("Conv1D",),
    ),
    LayerKind(
        "Conv2D",
        _LINEAR,
        _CONV_STRUCTURES,
        quantizers=_KERNEL_BIAS,
        channels="filters",
        folds_batchnorm=True,
        sparse_code="conv",
        hls4ml_nodes=("Conv2D",),
    ),
    # QKeras' fused Conv2D + BatchNormalization (QConv2DBatchnorm): held on its raw kernel, whose zeros are zeros
    # of the folded kernel it computes with (folding scales each output channel); pruned and exported
    # kernel-sparse as a Conv2D; its channels are not stripped (its batch normalization's state is not sliced)
    LayerKind(
        "Conv2DBatchnorm",
        _LINEAR,
        _CONV_STRUCTURES,
        quantizers=_KERNEL_BIAS,
        sparse_code="conv",
        hls4ml_nodes=("Conv2DBatchnorm",),
    ),
    LayerKind(
        "Dense",
        _LINEAR,
        ("element", "neuron", "input_channel", "block"),
        quantizers=_KERNEL_BIAS,
        channels="units",
        folds_batchnorm=True,
        sparse_code="dense",
        hls4ml_nodes=("Dense",),
    ),
    LayerKind(
        "DepthwiseConv2D",
        _DEPTHWISE,
        ("depthwise", "element"),
        "depthwise_kernel",
        (("depthwise", "kernel"), ("bias", "bias")),
        folds_batchnorm=True,
        hls4ml_nodes=("DepthwiseConv2D",),
    ),
    LayerKind(
        "SeparableConv2D",
        _SEPARABLE,
        default_weight=None,
        quantizers=(("depthwise", "kernel"), ("pointwise", "kernel"), ("bias", "bias")),
        precision="separable",
        folds_batchnorm=True,
    ),
    LayerKind("LSTM", _RECURRENT, quantizers=_RECURRENT_QUANTIZERS, precision="recurrent"),
    LayerKind("GRU", _RECURRENT, quantizers=_RECURRENT_QUANTIZERS, precision="recurrent"),
    # held and pruned, not exported kernel-sparse (hls4ml's own code, where it has any: 1.3 has no Conv3D); only
    # HGQ2 binds them (`frontends/hgq2/layers.py`)
    LayerKind("Conv3D", _LINEAR, _CONV_STRUCTURES, quantizers=_KERNEL_BIAS),
    LayerKind("EinsumDense", _LINEAR, quantizers=_KERNEL_BIAS),  # pruned where named, entry by entry
)
BY_NAME = {kind.name: kind for kind in KINDS}
BY_HLS4ML_NODE = {name: kind for kind in KINDS for name in kind.hls4ml_nodes}

_BOUND: dict = {}  # layer class -> kind (None: a framework's subclass that is another layer), from every front end
_NAMES: dict = {}  # class name -> kind (for configs, which name classes): the float and quantized class names
_RESOLVED: dict = {}  # class -> kind or None, by MRO (a cache)
_ATTRIBUTES: dict = {}  # layer class -> {weight name: its attribute}, where a framework names it otherwise


def bind(kind_name: str | None, *classes, attributes: dict | None = None) -> None:
    """A front end binds its layer classes to a kind (`fpgaprune/frontends/*/layers.py`); `None` marks its
    subclasses of a bound class that are other layers (Conv2DTranspose derives from Conv2D). `attributes`: the
    classes' own attribute names for the kind's weights, where they differ ({"depthwise_kernel": "kernel"})."""
    kind = BY_NAME[kind_name] if kind_name else None
    for cls in classes:
        _BOUND[cls] = kind
        if attributes:
            _ATTRIBUTES[cls] = dict(attributes)
        if kind is not None:
            _NAMES.setdefault(cls.__name__, kind)
    _RESOLVED.clear()


def bound_classes() -> dict:
    """{layer class: its kind (None: bound as another layer)} as the front ends bound them."""
    _front_ends_bound()
    return dict(_BOUND)


def _front_ends_bound(of=None) -> None:
    """The bindings of the front end that owns `of` (a layer or a class), or of every installed front end where
    `of` is None or a class name, made on first use (`framework.bind_all`)."""
    bind_all(of if of is None or isinstance(of, str) else _class_of(of))


def _class_of(layer_or_class) -> type:
    """The class a layer's kind and role are read from: its own, or the one a front end's view of it names
    (`kind_class`: a PyTorch layer is seen through a view of its module)."""
    if isinstance(layer_or_class, type):
        return layer_or_class
    try:  # the attribute itself: a framework layer's own `__getattr__` is not asked
        return object.__getattribute__(layer_or_class, "kind_class") or type(layer_or_class)
    except AttributeError:
        return type(layer_or_class)


def attribute_of(layer, weight_name: str) -> str:
    """The attribute under which `layer`'s class keeps the kind's weight `weight_name` (`bind`'s attributes)."""
    _front_ends_bound(layer)
    for cls in _class_of(layer).__mro__:
        if weight_name in _ATTRIBUTES.get(cls, {}):
            return _ATTRIBUTES[cls][weight_name]
    return weight_name


def kind_of(layer_or_name) -> LayerKind | None:
    """The kind of a layer (by the classes in its MRO: a subclass of Conv2D is a Conv2D), of a layer's record (its
    `kind`), of a layer class, or of a class name as configs write it; None when fpgaprune does not handle it."""
    if getattr(type(layer_or_name), "RECORDED", False):  # a `record.LayerRecord`
        return BY_NAME.get(layer_or_name.kind) if layer_or_name.kind else None
    if isinstance(layer_or_name, str):
        _front_ends_bound()
        return _NAMES.get(layer_or_name)
    cls = _class_of(layer_or_name)
    if cls not in _RESOLVED:
        _front_ends_bound(cls)
        _RESOLVED[cls] = next((_BOUND[c] for c in cls.__mro__ if c in _BOUND), None)
    return _RESOLVED[cls]


def kind_of_node(node) -> LayerKind | None:
    """The kind of an hls4ml node, by the nearest class of hls4ml's layer module in its MRO (backends wrap each
    node class, e.g. VitisConv2D, and hls4ml's pointwise pass subclasses Conv2D). That class names the kind
    exactly: hls4ml's DepthwiseConv1D, though derived from Conv1D, is not the Conv1D kind. None for a class the
    table does not name."""
    layer_class = next((c for c in type(node).__mro__ if c.__module__ == "hls4ml.model.layers"), None)
    return BY_HLS4ML_NODE.get(layer_class.__name__) if layer_class else None


def kind_names(predicate) -> tuple:
    """The class names (float and quantized, as configs write them) of the kinds that satisfy `predicate`."""
    _front_ends_bound()
    return tuple(name for name, kind in _NAMES.items() if predicate(kind))


# Layers with no weight to hold, by role. The role names are Keras' class names; each front end binds its own
# classes to them (`bind_role`), and `role_of` resolves a layer through its MRO, so a user's subclass of
# Dropout is a Dropout and a PyTorch MaxPool2d can be a MaxPooling2D.
IDENTITY_ELEMENTWISE = (  # the output is the input at inference; channels pass through in training too
    "Identity",
    "Dropout",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "SpatialDropout3D",
    "AlphaDropout",
    "GaussianDropout",
    "GaussianNoise",
    "ActivityRegularization",
)
IDENTITY_AT_INFERENCE = (  # the output is the input at inference (the random image transforms move pixels)
    *IDENTITY_ELEMENTWISE,
    "RandomFlip",
    "RandomTranslation",
    "RandomRotation",
    "RandomZoom",
    "RandomContrast",
    "RandomBrightness",
)
MERGES = ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate")
MAX_POOLING = ("MaxPooling1D", "MaxPooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D")
AVERAGE_POOLING = ("AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D")
POOLING = (*MAX_POOLING, *AVERAGE_POOLING)
RESHAPES = ("Flatten", "Reshape")
MOVES = ("UpSampling1D", "UpSampling2D", "Cropping1D", "Cropping2D", "Permute")  # outputs are inputs, moved
PADDINGS = ("ZeroPadding1D", "ZeroPadding2D")
ACTIVATIONS = ("Activation", "ReLU", "LeakyReLU", "ELU", "Softmax")
ROLES = (
    *IDENTITY_AT_INFERENCE,
    *MERGES,
    *POOLING,
    *RESHAPES,
    *MOVES,
    *PADDINGS,
    *ACTIVATIONS,
    "BatchNormalization",
    "InputLayer",
)

# What each stage lets pass, named by what passes:
CHANNELS_PASS = (
    "BatchNormalization",
    "Activation",
    "ReLU",
    "LeakyReLU",
    "ELU",
    *POOLING,
    "Flatten",
    *IDENTITY_ELEMENTWISE,
)  # strip: a channel of the input is a channel of the output
VALUES_PASS = (*RESHAPES, "InputLayer", *IDENTITY_AT_INFERENCE)  # hls4ml types: the output is the input, reshaped
OUTPUT_PASS = (*RESHAPES, "Dropout", "Identity", "GaussianNoise", "GaussianDropout", "AlphaDropout")  # the task

_ROLE_BOUND: dict = {}  # class -> role name (None: a framework's subclass that is something else)
_ROLE_RESOLVED: dict = {}


def bind_role(role: str | None, *classes) -> None:
    """A front end binds its classes to a role (`ROLES`); None keeps a subclass of a bound class its own name
    (QKeras' QBatchNormalization is no float BatchNormalization)."""
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown layer role {role!r}; the roles are {', '.join(ROLES)}")
    for cls in classes:
        _ROLE_BOUND[cls] = role
    _ROLE_RESOLVED.clear()


def role_of(layer_or_class) -> str:
    """The role of a layer (or class) by the classes in its MRO; its class name when none is bound."""
    cls = _class_of(layer_or_class)
    if cls not in _ROLE_RESOLVED:
        _front_ends_bound(cls)
        bound = next((c for c in cls.__mro__ if c in _ROLE_BOUND), None)
        _ROLE_RESOLVED[cls] = (_ROLE_BOUND[bound] if bound is not None else None) or cls.__name__
    return _ROLE_RESOLVED[cls]
