"""PyTorch's module classes bound to fpgaprune's layer kinds and roles, and the views through which the rest of
fpgaprune reads a module: `TorchLayer` (the module's name as `named_modules()` gives it, its kind's weights as
attributes) and `TorchWeight` (one parameter, in fpgaprune's layout).

Layouts: a Linear weight is (out, in), fpgaprune's Dense kernel (in, out); a Conv2d weight (out, in, kh, kw),
fpgaprune's (kh, kw, in, out); a Conv1d weight (out, in, k), fpgaprune's (k, in, out). Selections index the
parameter in PyTorch's own layout (`features.3[5, 3, :, :]`: the kernel from input 3 to output 5)."""

import numpy as np
import torch
from torch import nn

from fpgaprune.layer_kinds import bind, bind_role

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
}


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


class TorchLayer:
    """A module seen as a layer: `name` as `named_modules()` gives it, its kind read from the module's class
    (`kind_class`), and its kind's weights as attributes (`kernel`, `bias`)."""

    def __init__(self, name: str, module):
        self.name, self.module = name, module

    @property
    def kind_class(self) -> type:
        return type(self.module)

    def _weight(self, parameter: str):
        return TorchWeight(self.module, parameter) if getattr(self.module, parameter, None) is not None else None

    @property
    def kernel(self):
        return self._weight("weight")

    @property
    def bias(self):
        return self._weight("bias")

    @property
    def weights(self) -> list:
        return [w for w in (self.kernel, self.bias) if w is not None]

    def __repr__(self) -> str:
        return f"TorchLayer({self.name!r}, {type(self.module).__name__})"


def layer_views(model) -> list:
    """Every leaf module of `model` (and every module of a kind), in `named_modules()` order, as a view; a
    hold's parametrization is part of its module, not a layer."""
    views = []
    for name, module in model.named_modules():
        if not name or "parametrizations" in name.split("."):
            continue
        children = [child for key, child in module.named_children() if key != "parametrizations"]
        if not children or isinstance(module, tuple(KINDS.values())):
            views.append(TorchLayer(name, module))
    return views


def as_array(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy() if isinstance(tensor, torch.Tensor) else np.asarray(tensor)
