"""The hold as a parametrization of the module's parameter (`torch.nn.utils.parametrize`): the module computes
with `where(mask, target, original)`, so held entries are exact whatever the user's loop does to `original`:
any optimizer (momentum, Adam's moments, weight decay), gradient clipping, autocast with a GradScaler (the
parameter stays float32; autocast casts the product's operands), an EMA (`AveragedModel` copies the module with
its parametrization), `state_dict` save and load (the mask and target are buffers). The entries are kept in
fpgaprune's layout (`masking.held.HeldEntries`); the buffers in PyTorch's.

hls4ml's PyTorch converter matches modules by class name and refuses `ParametrizedLinear`: export a plain copy
(`fp.finalize`, which leaves the held values in `.weight` and removes the parametrization).
"""

import copy

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from fpgaprune.frontends.torch.layers import PARAMETERS, layout_of
from fpgaprune.masking.held import HeldEntries, is_hold


class HeldParametrization(HeldEntries, nn.Module):
    """Keeps the held entries of one parameter at their targets: `forward(w) = where(mask, target, w)`."""

    def __init__(self, entries, shape: tuple, layout: tuple):
        nn.Module.__init__(self)
        HeldEntries.__init__(self, entries)
        self.fpgaprune_shape, self.layout = tuple(shape), tuple(layout)
        self.inverse = tuple(int(i) for i in np.argsort(layout))
        mask, target = self._torch_arrays()
        self.register_buffer("mask", mask)
        self.register_buffer("target", target)

    def _torch_arrays(self):
        mask, target = self.compiled(self.fpgaprune_shape)
        return (
            torch.from_numpy(np.ascontiguousarray(mask.transpose(self.inverse))),
            torch.from_numpy(np.ascontiguousarray(target.transpose(self.inverse))),
        )

    def entries_changed(self) -> None:
        mask, target = self._torch_arrays()
        self.mask.copy_(mask)
        self.target.copy_(target)

    def forward(self, weight):
        return torch.where(self.mask, self.target.to(weight.dtype), weight)


def hold_of(variable):
    """The hold on a TorchWeight's parameter, or None."""
    module, parameter = variable.module, variable.parameter
    if not parametrize.is_parametrized(module, parameter):
        return None
    found = [p for p in module.parametrizations[parameter] if is_hold(p)]
    return found[0] if found else None


def with_holds(model, groups: dict, keep_holds: bool):
    """A deep copy of `model` with each (layer, weight) of `groups` held (parametrized), or with its held
    values left in a plain parameter and no parametrization (keep_holds=False).

    A deep copy of a parametrized module shares its class with the original, and `remove_parametrizations`
    edits that class: so a hold is replaced in place, and a copy is made plain by giving it its own class back."""
    held = copy.deepcopy(model)
    for (layer, weight), entries in groups.items():
        module, parameter = held.get_submodule(layer), PARAMETERS[weight]
        if not keep_holds:
            release_holds(module)
            continue
        layout = layout_of(module, parameter)
        shape = tuple(getattr(module, parameter).shape)
        hold = HeldParametrization(entries, tuple(shape[a] for a in layout), layout)
        index = _hold_index(module, parameter)
        if index is None:
            parametrize.register_parametrization(module, parameter, hold)
        else:
            module.parametrizations[parameter][index] = hold
        _write_targets(module, parameter, hold)
    return held


def _hold_index(module, parameter: str) -> int | None:
    if not parametrize.is_parametrized(module, parameter):
        return None
    return next((i for i, p in enumerate(module.parametrizations[parameter]) if is_hold(p)), None)


def release_holds(module) -> None:
    """The module with its parametrized values as plain parameters and its own class back (in place)."""
    if not parametrize.is_parametrized(module):
        return
    values = {name: getattr(module, name).detach().clone() for name in module.parametrizations}
    del module._modules["parametrizations"]
    module.__class__ = type(module).__bases__[0]
    for name, value in values.items():
        module._parameters[name] = nn.Parameter(value)


def _write_targets(module, parameter: str, hold: HeldParametrization) -> None:
    """The held entries of the trained tensor (`original`) set to their targets too, so that a copy taken
    without the parametrization holds them."""
    original = module.parametrizations[parameter].original
    with torch.no_grad():
        original.copy_(torch.where(hold.mask, hold.target.to(original.dtype), original))


def enforce(model) -> None:
    """Every held parameter's trained tensor set to its targets again."""
    for module in model.modules():
        for parameter in getattr(module, "parametrizations", {}):
            hold = next((p for p in module.parametrizations[parameter] if is_hold(p)), None)
            if hold is not None:
                _write_targets(module, parameter, hold)
