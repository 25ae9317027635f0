"""PyTorch's module classes bound to fpgaprune's layer kinds and roles, and the views through which the rest of
fpgaprune reads a module: `TorchLayer` (the module's name as `named_modules()` gives it, its kind's weights as
attributes) and `TorchWeight` (one parameter, in fpgaprune's layout).

Layouts: a Linear weight is (out, in), fpgaprune's Dense kernel (in, out); a Conv2d weight (out, in, kh, kw),
fpgaprune's (kh, kw, in, out); a Conv1d weight (out, in, k), fpgaprune's (k, in, out). Selections index the
parameter in PyTorch's own layout (`features.3[5, 3, :, :]`: the kernel from input 3 to output 5)."""

import numpy as np
import torch
from torch import nn

from fpgaprune.errors import UnsupportedLayerError
from fpgaprune.model.layer_kinds import bind, bind_role

KINDS = {"Dense": nn.Linear, "Conv2D": nn.Conv2d, "Conv1D": nn.Conv1d}
# PyTorch's layout -> fpgaprune's, per parameter of each kind's modules
LAYOUTS = {nn.Linear: {"weight": (1, 0)}, nn.Conv2d: {"weight": (2, 3, 1, 0)}, nn.Conv1d: {"weight": (2, 1, 0)}}
PARAMETERS = {"kernel": "weight", "bias": "bias"}  # fpgaprune's weight name -> the module's parameter
ROLES = {
    "ReLU": (nn.ReLU,),
    "Flatten": (nn.Flatten,),
    "Dropout": (nn.Dropout, nn.Dropout1d, nn.Dropout2d),
    "Identity": (nn.Identity,),
    "MaxPooling1D": (nn.MaxPool1d,),
    "MaxPooling2D": (nn.MaxPool2d,),
    "AveragePooling1D": (nn.AvgPool1d,),
    "AveragePooling2D": (nn.AvgPool2d,),
    "BatchNormalization": (nn.BatchNorm1d, nn.BatchNorm2d),
    "LeakyReLU": (nn.LeakyReLU,),
}


class FunctionalAdd:
    """`a + b` or `torch.add(a, b)` between layers' outputs: hls4ml's Add node (no module; a graph node)."""


class FunctionalConcatenate:
    """`torch.cat([a, b], dim=1)`: hls4ml's Concatenate node."""


MERGE_FUNCTIONS = {"add": FunctionalAdd, "cat": FunctionalConcatenate}  # torch.fx node target names


class TorchFunction:
    """A function the forward calls between layers, seen as a layer of the graph: a merge (`+`, `torch.cat`),
    named as torch.fx names the call (hls4ml's converter names its node so too), or an activation
    (`torch.relu(self.fc1(x))`, named `fc1_relu`: `functional.py`), whose module class it takes."""

    module, kernel, bias, use_bias = None, None, None, False
    weights = ()

    def __init__(self, name: str, kind_class: type):
        self.name, self.kind_class = name, kind_class

    @property
    def activation(self):
        """A table activation's function (as `TorchLayer.activation`); None for any other."""
        return TABLE_FUNCTIONS.get(self.kind_class)

    def __repr__(self) -> str:
        return f"TorchFunction({self.name!r}, {self.kind_class.__name__})"


TABLE_FUNCTIONS = {nn.Tanh: torch.tanh, nn.Sigmoid: torch.sigmoid, nn.Softmax: torch.softmax}  # hls4ml: tables

_BOUND: list = []


def bind_all() -> None:
    """PyTorch's classes bound to the kinds and roles, once."""
    if _BOUND:
        return
    _BOUND.append(True)
    for kind, cls in KINDS.items():
        bind(kind, cls)
    for role, classes in ROLES.items():
        bind_role(role, *classes)
    bind_role("Activation", *TABLE_FUNCTIONS)
    bind_role("Add", FunctionalAdd)
    bind_role("Concatenate", FunctionalConcatenate)


def layout_of(module, parameter: str) -> tuple:
    """The permutation from the parameter's PyTorch layout to fpgaprune's (identity for a bias)."""
    for cls in type(module).__mro__:
        if cls in LAYOUTS:
            return LAYOUTS[cls].get(parameter, tuple(range(getattr(module, parameter).dim())))
    return tuple(range(getattr(module, parameter).dim()))


class TorchWeight:
    """One parameter of a module, as fpgaprune reads it: its shape in fpgaprune's layout, and the tensor."""

    def __init__(self, module, parameter: str):
        self.module, self.parameter = module, parameter
        self.layout = layout_of(module, parameter)

    @property
    def name(self) -> str:
        return self.parameter

    def tensor(self):
        """The parameter as the module computes with it (a held one: through its parametrization)."""
        return getattr(self.module, self.parameter)

    @property
    def torch_shape(self) -> tuple:
        return tuple(self.tensor().shape)

    @property
    def shape(self) -> tuple:
        return tuple(self.torch_shape[axis] for axis in self.layout)

    def numpy(self) -> np.ndarray:
        return self.tensor().detach().cpu().numpy().transpose(self.layout)

    def __array__(self, dtype=None, copy=None):
        values = self.numpy()
        return values.astype(dtype) if dtype is not None else values


class TorchLayer:
    """A module seen as a layer: `name` as `named_modules()` gives it, its kind read from the module's class
    (`kind_class`), and its kind's weights as attributes (`kernel`, `bias`)."""

    def __init__(self, name: str, module, root=None):
        self.name, self.module, self.root = name, module, root

    @property
    def kind_class(self) -> type:
        return type(self.module)

    def _weight(self, parameter: str):
        """The parameter as a TorchWeight (None where the module holds no tensor by that name: a recurrent
        module's `bias` is its constructor's flag, its tensors `bias_ih_l0`, ...)."""
        return TorchWeight(self.module, parameter) if _has(self.module, parameter) else None

    @property
    def kernel(self):
        return self._weight("weight")

    @property
    def bias(self):
        return self._weight("bias")

    @property
    def weights(self) -> list:
        return [w for w in (self.kernel, self.bias) if w is not None]

    @property
    def output_shape(self) -> tuple:
        """(None, ..., channels): the output shape in fpgaprune's layout, from one forward of the input shape the
        module has seen (`INPUT_SHAPE`)."""
        shapes = output_shapes(self.root) if self.root is not None else {}
        if self.name not in shapes:
            raise AttributeError(
                f"module '{self.name}': its output shape is known once the model has run on data "
                "(fpgaprune records one sample's shape when it trains, predicts or exports)"
            )
        return shapes[self.name]

    # What the precision derivation reads of a layer, in Keras' terms
    @property
    def activation(self):
        """A table activation module's function (named as Keras names it); None for every other module, since
        a PyTorch layer applies no activation inside it."""
        return TABLE_FUNCTIONS.get(type(self.module))

    @property
    def use_bias(self) -> bool:
        return _has(self.module, "bias")

    @property
    def padding(self) -> str:
        padding = getattr(self.module, "padding", 0)
        return "valid" if padding in ("valid", 0) or (isinstance(padding, tuple) and not any(padding)) else "same"

    @property
    def strides(self) -> tuple | None:
        """A convolution's or pooling's stride per spatial axis (None for a module without one)."""
        return self._per_axis("stride")

    @property
    def dilation_rate(self) -> tuple | None:
        return self._per_axis("dilation")

    def _per_axis(self, attribute: str) -> tuple | None:
        """The module's `attribute` per spatial axis (PyTorch takes one number for all of them)."""
        value = getattr(self.module, attribute, None)
        if value is None:
            return None
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * len(self.pool_size)

    @property
    def pool_size(self) -> tuple:
        size = self.module.kernel_size
        return (
            tuple(size)
            if isinstance(size, (tuple, list))
            else (size,) * (2 if "2d" in type(self.module).__name__ else 1)
        )

    def __repr__(self) -> str:
        return f"TorchLayer({self.name!r}, {type(self.module).__name__})"


CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
RECURRENT = (nn.RNNBase, nn.RNNCellBase)


def check_not_recurrent(model, what: str) -> None:
    """One line for the first recurrent module: no route quantizes and exports one exactly."""
    import hls4ml

    for name, module in model.named_modules():
        if isinstance(module, RECURRENT):
            raise UnsupportedLayerError(
                f"module '{name}' ({type(module).__name__}): {what} has no exact route for recurrent PyTorch "
                f"layers (hls4ml {hls4ml.__version__}'s PyTorch converter reads them in float only, its ONNX "
                "converter not at all); export recurrent models from Keras with QKeras' QLSTM/QGRU"
            )


LIBRARY_LAYERS = ("torch.nn", "torch.ao.nn", "brevitas.nn", "fpgaprune.frontends.torch")


def is_layer(module) -> bool:
    """A layer: a module of a kind, a library's module (not a container), or a leaf of the user's."""
    if isinstance(module, tuple(KINDS.values())):
        return True
    if isinstance(module, CONTAINERS) or type(module) is nn.Module:  # GraphModule copies hold plain nn.Modules
        return False
    children = [key for key, _ in module.named_children() if key != "parametrizations"]
    return type(module).__module__.startswith(LIBRARY_LAYERS) or not children


def layer_views(model) -> list:
    """Every layer of `model` (`is_layer`), in `named_modules()` order, as a view; what a layer holds (a hold's
    parametrization, a Brevitas quantizer) is part of it, not a layer."""
    views, inside = [], ()
    for name, module in model.named_modules():
        if not name or name.startswith(inside):
            continue
        if is_layer(module):
            views.append(TorchLayer(name, module, model))
            inside = tuple({*inside, name + "."})
    return views


def same_shape(module, classes: tuple, **options):
    """A new layer shaped like the Linear/Conv2d/Conv1d `module`, of the matching class in `classes` (linear,
    conv2d, conv1d), with `options` (bias, quantizers) added."""
    linear, conv2d, conv1d = classes
    if isinstance(module, nn.Linear):
        return linear(module.in_features, module.out_features, **options)
    return (conv2d if isinstance(module, nn.Conv2d) else conv1d)(
        module.in_channels,
        module.out_channels,
        module.kernel_size,
        stride=module.stride,
        padding=module.padding,
        dilation=module.dilation,
        groups=module.groups,
        padding_mode=module.padding_mode,
        **options,
    )


def _has(module, name: str) -> bool:
    return isinstance(getattr(module, name, None), torch.Tensor)


def _stored(module, name: str):
    """The tensor a parameter is stored in: itself, or a parametrization's original."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is not None and name in parametrizations:
        return parametrizations[name].original
    return getattr(module, name)


def parameters_of(module) -> list:
    """The module's own weight and bias (those it has), in PyTorch's layout, as held."""
    return [as_array(getattr(module, name)) for name in ("weight", "bias") if _has(module, name)]


def write_parameters(module, values) -> None:
    """Write `parameters_of`-ordered values into the module's weight and bias (a held one: into its original)."""
    names = [name for name in ("weight", "bias") if _has(module, name)]
    with torch.no_grad():
        for name, value in zip(names, values, strict=True):
            target = _stored(module, name)
            target.copy_(torch.as_tensor(np.asarray(value), dtype=target.dtype))


def as_array(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy() if isinstance(tensor, torch.Tensor) else np.asarray(tensor)


INPUT_SHAPE = "fpgaprune_input_shape"  # one sample's input shape (no batch), recorded on a module that saw data
QUANTIZATION = "fpgaprune_quantization"  # on a quantized twin: {"spec": {...}, "batchnorm": "fold"}
_SHAPES = "_fpgaprune_output_shapes"


def record_input_shape(model, x) -> None:
    """Remember one sample's shape on the module (its layers' output shapes follow from it)."""
    model.__dict__[INPUT_SHAPE] = tuple(int(d) for d in np.shape(x)[1:])


def output_shapes(model) -> dict:
    """{layer: its output shape, batch None, channels last; "": the model's} from one forward of zeros (eval mode,
    no grad), cached for the input shape; {} before the module has seen data."""
    shape = getattr(model, INPUT_SHAPE, None)
    cached = model.__dict__.get(_SHAPES)
    if shape is None:
        return {}
    if cached is not None and cached[0] == shape:
        return cached[1]
    shapes, handles = {}, []
    for view in layer_views(model):
        keep = (lambda name: lambda module, args, out: shapes.__setitem__(name, _channels_last(out.shape)))(view.name)
        handles.append(view.module.register_forward_hook(keep))
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            shapes[""] = _channels_last(model(torch.zeros((1, *shape))).shape)  # the model's own output
    finally:
        model.train(training)
        for handle in handles:
            handle.remove()
    model.__dict__[_SHAPES] = (shape, shapes)
    return shapes


def model_output_shape(model) -> tuple:
    """The model's output shape (batch None, channels last), once it has seen data."""
    shapes = output_shapes(model)
    if "" not in shapes:
        raise AttributeError(
            f"{type(model).__name__}: its output shape is known once the model has run on data "
            "(fpgaprune records one sample's shape when it trains, predicts or exports)"
        )
    return shapes[""]


def _channels_last(shape) -> tuple:
    dims = tuple(int(d) for d in shape[1:])
    return (None, *dims[1:], dims[0]) if len(dims) >= 2 else (None, *dims)
