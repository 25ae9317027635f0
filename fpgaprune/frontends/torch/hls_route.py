"""hls4ml's PyTorch converter on the exported GraphModule (`export.py`): a plain copy of it, fpgaprune's
activation quantizer registered as an hls4ml layer, and the converter's config and IR."""

import copy
import functools
import sys

import torch
from hls4ml.converters.pytorch_to_hls import get_supported_pytorch_layers, register_pytorch_layer_handler
from hls4ml.utils.torch import HLS4MLModule
from torch import nn

from fpgaprune.frontends.torch.export import CHANNELS_LAST, exported_graph, input_shape_of
from fpgaprune.frontends.torch.holds import release_holds
from fpgaprune.frontends.torch.layers import same_shape
from fpgaprune.frontends.torch.quantizers import read_proxy

_SKIPPED = ("Dropout", "Sequential")


class ActivationQuantizer(HLS4MLModule):
    """A signed activation quantizer (Brevitas' QuantIdentity) in the plain copy: round half to even onto a
    grid of `2**-frac`, saturate to [low, high]. hls4ml makes it a linear Activation whose result type (set by
    fpgaprune's derived types) rounds and saturates the same way."""

    def __init__(self, frac: int, low: float, high: float):
        super().__init__()
        self.frac, self.low, self.high = frac, low, high

    def forward(self, x):
        scale = 2.0**self.frac
        return torch.clamp(torch.round(x * scale) / scale, self.low, self.high)


def _parse_activation_quantizer(operation, layer_name, input_names, input_shapes, node, class_object, *_):
    layer = {"class_name": "Activation", "activation": "linear", "name": layer_name, "inputs": input_names}
    return layer, list(input_shapes[0])


_REGISTERED: list = []


def register() -> None:
    if not _REGISTERED:
        register_pytorch_layer_handler(ActivationQuantizer.__name__, _parse_activation_quantizer)
        _REGISTERED.append(True)


def _plain_layer(name: str, module):
    """The module hls4ml's converter reads in place of `module` (a copy; quantized values where quantized)."""
    import brevitas.nn as qnn

    if isinstance(module, (qnn.QuantLinear, qnn.QuantConv1d, qnn.QuantConv2d)):
        return _plain_weighted(module)
    if isinstance(module, qnn.QuantReLU):
        return nn.ReLU()
    if isinstance(module, qnn.QuantIdentity):
        quantizer = read_proxy(module.act_quant, name)
        if quantizer is None:
            return nn.Identity()
        fixed = quantizer.fixed
        return ActivationQuantizer(fixed.frac, -fixed.hi if quantizer.narrow else fixed.lo, fixed.hi)
    plain = copy.deepcopy(module)
    release_holds(plain)
    return plain


def _plain_weighted(module):
    """A Linear/Conv holding a Brevitas layer's quantized weight and bias."""
    plain = same_shape(module, (nn.Linear, nn.Conv2d, nn.Conv1d), bias=module.bias is not None)
    with torch.no_grad():
        plain.weight.copy_(module.quant_weight().value)
        if module.bias is not None:
            quantized = module.quant_bias()
            plain.bias.copy_(quantized.value if hasattr(quantized, "value") else quantized)
    return plain.eval()


def plain_copy(model) -> torch.fx.GraphModule:
    """The GraphModule hls4ml's converter reads: the same graph over plain PyTorch layers."""
    exported = model if isinstance(model, torch.fx.GraphModule) else exported_graph(model)
    graph, modules = copy.deepcopy(exported.graph), {}
    for node in graph.nodes:
        if node.op == "call_module":
            modules[node.target] = _plain_layer(node.target, exported.get_submodule(node.target))
    plain = torch.fx.GraphModule(modules, graph, class_name=exported.__class__.__name__)
    return plain.eval()


def unsupported_layer(model) -> str | None:
    """The first layer whose plain form hls4ml's converter has no handler for, or whose settings it ignores: one
    line, or None."""
    import hls4ml

    supported = set(get_supported_pytorch_layers()) | set(_SKIPPED) | {ActivationQuantizer.__name__}
    for node in exported_graph(model).graph.nodes:
        if node.op == "call_module":
            module = model.get_submodule(node.target)
            cls = type(_plain_layer(node.target, module)).__name__
            where = f"module '{node.target}' ({type(module).__name__}): hls4ml {hls4ml.__version__}'s PyTorch converter"
            if cls not in supported:
                return f"{where} has no {cls}"
            ignored = _ignored_pooling_setting(module)
            if ignored:
                return f"{where} ignores its {ignored}"
    return None


def _ignored_pooling_setting(module) -> str | None:
    """A pooling setting hls4ml's PyTorch converter does not read (its output would differ), as the line names
    it; None for any other module."""
    if not isinstance(module, (nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d, nn.AvgPool2d)):
        return None
    if getattr(module, "ceil_mode", False):
        return "ceil_mode=True (its output would have fewer positions); use ceil_mode=False with padding"
    dilation = getattr(module, "dilation", 1)
    if any(d != 1 for d in (dilation if isinstance(dilation, (tuple, list)) else (dilation,))):
        return f"dilation={dilation}; use dilation=1"
    if getattr(module, "divisor_override", None):
        return f"divisor_override={module.divisor_override}; use none"
    return None


def config_from_model(model, granularity: str = "name", **kwargs) -> dict:
    """hls4ml's config of the module (channels-last inside: `CHANNELS_LAST`)."""
    import hls4ml

    register()
    config = hls4ml.utils.config_from_pytorch_model(
        plain_copy(model),
        input_shape=input_shape_of(model),
        granularity=granularity,
        channels_last_conversion=CHANNELS_LAST,
        **kwargs,
    )
    config.pop("PytorchModel", None)
    config["InputShape"] = list(input_shape_of(model))
    return config


def convert_model(model, hls_config: dict, output_dir, **kwargs):
    """hls4ml's unbuilt ModelGraph of the module."""
    import hls4ml

    register()
    config = {**hls_config, "InputShape": input_shape_of(model)}
    hls_model = hls4ml.converters.convert_from_pytorch_model(
        plain_copy(model), hls_config=config, output_dir=str(output_dir), **kwargs
    )
    hls_model.write = _without_keras(hls_model.write)  # compile() and the exporter call it
    return hls_model


def _without_keras(write):
    """`write` with `import keras` failing where this process has not imported Keras: hls4ml 1.3's writer imports
    it (and with it TensorFlow) only to register a YAML representer for Keras models (`VivadoWriter.write_yml`,
    which passes over a failed import); a PyTorch process has no Keras model, and TensorFlow loaded beside a
    CUDA build of torch crashes it."""

    @functools.wraps(write)
    def written(*args, **kwargs):
        if "keras" in sys.modules:
            return write(*args, **kwargs)
        sys.modules["keras"] = None  # an import of a None entry raises ImportError
        try:
            return write(*args, **kwargs)
        finally:
            if "keras" in sys.modules and sys.modules["keras"] is None:
                del sys.modules["keras"]

    return written
