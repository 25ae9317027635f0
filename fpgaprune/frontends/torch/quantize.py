"""The quantized twin of a module: the same module tree and names, its Linear/Conv1d/Conv2d layers become
Brevitas' QuantLinear/QuantConv1d/QuantConv2d and its ReLUs QuantReLU, with fpgaprune's quantizer texts read as
constant power-of-two Brevitas quantizers (`quantizers.py`); holds carried over. The user trains it (QAT) as any
module; a BatchNorm right after a Conv/Linear is folded into it first (as `torch.ao`'s `fuse_conv_bn_eval`).

A Brevitas layer that comes in keeps its own quantizers (read, and refused at export in one line where they
have no exact fixed-point type); `quantization.layers.<name>` rebuilds it with the quantizers named there.
"""

import copy

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from fpgaprune.errors import QuantizationConfigError
from fpgaprune.frontends.torch.files import QUANTIZATION
from fpgaprune.frontends.torch.graph import graph_edges
from fpgaprune.frontends.torch.layers import check_not_recurrent, same_shape
from fpgaprune.frontends.torch.quantizers import brevitas_quant, from_text
from fpgaprune.masking import FREEZE, HoldEntry, MaskManifest, finalize, hold
from fpgaprune.quantize.spec import QuantizationSpec

FLOAT_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d)
_BATCHNORMS = (nn.BatchNorm1d, nn.BatchNorm2d)


def _brevitas():
    import brevitas.nn as qnn

    return qnn


def quantized_twin(model, spec, batchnorm: str = "fold"):
    """A new module: `model`'s tree with quantized layers (BatchNorm folded), its holds carried over."""
    spec = spec if isinstance(spec, QuantizationSpec) else QuantizationSpec.from_dict(spec)
    if batchnorm != "fold":
        raise QuantizationConfigError(
            f"batchnorm={batchnorm!r}: PyTorch models fold each BatchNorm into the layer before it ('fold')"
        )
    check_not_recurrent(model, "quantization")
    plain, manifest = finalize(model)
    spec.check_layers(name for name, _ in plain.named_modules() if name)
    plain.eval()
    _fold_batchnorms(plain)
    for name, module in list(plain.named_modules()):
        replacement = _quantized_module(name, module, spec)
        if replacement is not None:
            _replace(plain, name, replacement)
    setattr(plain, QUANTIZATION, {"spec": {"default": spec.default, "layers": spec.layers}, "batchnorm": batchnorm})
    entries = [
        HoldEntry(e.layer, e.variable, e.mode, e.index, e.where, None if e.mode == FREEZE else e.value)
        for e in manifest
    ]
    return hold(plain, MaskManifest(entries)) if entries else plain


def _quantized_module(name: str, module, spec: QuantizationSpec):
    """The quantized layer that replaces `module`, or None (kept as it is)."""
    qnn, roles, named = _brevitas(), spec.for_layer(name), spec.layers.get(name, {})
    brought = type(module).__module__.startswith("brevitas.nn")
    if isinstance(module, FLOAT_LAYERS) and (not brought or named):
        return _quantized_layer(name, module, roles)
    if type(module) is nn.ReLU or (isinstance(module, qnn.QuantReLU) and "activation" in named):
        text = roles.get("activation")
        if text is None or not text.startswith("quantized_relu"):
            if "activation" in named:
                raise QuantizationConfigError(
                    f"quantization.layers.{name}.activation: {text!r} does not compute a ReLU; use quantized_relu"
                )
            return None  # the default computes another function: the ReLU stays float (exact on its input's grid)
        return qnn.QuantReLU(act_quant=brevitas_quant(from_text(text, f"{name}.activation"), "activation"))
    return None


def _quantized_layer(name: str, module, roles: dict):
    qnn = _brevitas()
    for role in ("kernel", "bias"):
        if role == "bias" and module.bias is None:
            continue
        if roles.get(role) is None:
            raise QuantizationConfigError(f"quantization: layer '{name}' has no {role} quantizer")
    weight_quant = brevitas_quant(from_text(roles["kernel"], f"{name}.kernel"), "kernel")
    bias_quant = brevitas_quant(from_text(roles["bias"], f"{name}.bias"), "bias") if module.bias is not None else None
    options = {"bias": module.bias is not None, "weight_quant": weight_quant, "bias_quant": bias_quant}
    layer = same_shape(module, (qnn.QuantLinear, qnn.QuantConv2d, qnn.QuantConv1d), **options)
    with torch.no_grad():
        layer.weight.copy_(module.weight)
        if module.bias is not None:
            layer.bias.copy_(module.bias)
    return layer


def _replace(model, name: str, replacement) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, replacement)


def _fold_batchnorms(model) -> None:
    """Each BatchNorm whose only input is a Linear/Conv that feeds nothing else: folded into it, an Identity
    left in its place."""
    layers, inbound, _ = graph_edges(model)
    readers = {}
    for name, sources in inbound.items():
        for source in sources:
            readers.setdefault(source, []).append(name)
    for view in layers:
        sources = inbound[view.name]
        if not isinstance(view.module, _BATCHNORMS) or len(sources) != 1 or readers.get(sources[0]) != [view.name]:
            continue
        before = model.get_submodule(sources[0])
        if type(before) not in FLOAT_LAYERS:
            continue
        fuse = fuse_linear_bn_eval if isinstance(before, nn.Linear) else fuse_conv_bn_eval
        _replace(model, sources[0], fuse(copy.deepcopy(before), view.module))
        _replace(model, view.name, nn.Identity())


def quantizer_sources(model, spec, default_given: bool = True) -> dict:
    """{layer: where its quantizers come from}: its own (a Brevitas layer, kept), `quantization.layers`, or the
    default."""
    spec = spec if isinstance(spec, QuantizationSpec) else QuantizationSpec.from_dict(spec)
    default = "quantization.default" if default_given else "the built-in default (quantization.default unset)"
    sources = {}
    for name, module in model.named_modules():
        named = sorted(spec.layers.get(name, {}))
        if type(module).__module__.startswith("brevitas.nn") and not named:
            sources[name] = "its own quantizers, kept"
        elif isinstance(module, FLOAT_LAYERS) or (
            type(module) is nn.ReLU and str(spec.for_layer(name).get("activation", "")).startswith("quantized_relu")
        ):
            sources[name] = f"quantization.layers ({', '.join(named)}), else {default}" if named else default
    return sources
