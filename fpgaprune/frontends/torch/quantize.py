"""The quantized twin of a module: the same module tree and names, its Linear/Conv1d/Conv2d layers become
Brevitas' QuantLinear/QuantConv1d/QuantConv2d and its ReLUs QuantReLU, with fpgaprune's quantizer texts read as
constant power-of-two Brevitas quantizers (`quantizers.py`); holds carried over. The user trains it (QAT) as any
module; a BatchNorm right after a Conv/Linear is folded into it first (as `torch.ao`'s `fuse_conv_bn_eval`).

Brevitas' default quantizers (a float scale per tensor or per channel) become the nearest power-of-two
fixed-point quantizers of the same bits (`quantizers.ScaledQuantizer.nearest`), each written into the twin's
spec as a `quantization.layers` text, so that the twin rebuilds the same from its file; one note per layer, and
the run's QAT epochs recover what the rounding of the scale moved. A float bias of a quantized layer takes the
default bias quantizer. (The alternative, Brevitas' QONNX export into hls4ml's ONNX converter, keeps the float
scales as `ApplyAlpha` nodes: bounded at best, not exact, and heavier to install.)

Activations the forward calls as functions (`torch.relu(self.fc1(x))`) become modules first (`functional.py`:
the twin is then a GraphModule of the same modules), so they are quantized as `nn.ReLU` modules are. A ReLU6 is
a QuantReLU where its quantizer saturates at or below 6 (then the two agree); a LeakyReLU is one line: Brevitas
has no quantized one, and hls4ml rounds alpha·x in its own types.

A Brevitas layer that comes in keeps its own quantizers where a fixed-point type holds them exactly (converted as
above where their scale is a float); `quantization.layers.<name>` rebuilds it with the quantizers named there.
"""

import copy
import warnings

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from fpgaprune.errors import FpgapruneNote, QuantizationConfigError
from fpgaprune.frontends.torch.functional import as_modules
from fpgaprune.frontends.torch.graph import LayerTracer, graph_edges
from fpgaprune.frontends.torch.layers import QUANTIZATION, check_not_recurrent, same_shape
from fpgaprune.frontends.torch.quantizers import ScaledQuantizer, brevitas_quant, from_text, read_proxy, text_of
from fpgaprune.masking import FREEZE, HoldEntry, MaskManifest, finalize, hold
from fpgaprune.model.layer_kinds import role_of
from fpgaprune.quantize.fixed_types import FixedType
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
    plain = as_modules(plain, LayerTracer)
    spec.check_layers(name for name, _ in plain.named_modules() if name)
    plain.eval()
    _fold_batchnorms(plain)  # first: a Brevitas layer's quantizers are then read of its folded weights
    spec = _with_conversions(plain, spec)
    inside = []  # modules whose parts are not the model's layers: those replaced, and Brevitas' own
    for name, module in list(plain.named_modules()):
        if any(name.startswith(f"{outer}.") for outer in inside):
            continue  # e.g. a QuantReLU's own nn.ReLU, which must not become a second quantizer
        replacement = _quantized_module(name, module, spec)
        if replacement is not None:
            _replace(plain, name, replacement)
        if replacement is not None or type(module).__module__.startswith("brevitas"):
            inside.append(name)
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
    if isinstance(module, nn.LeakyReLU):
        raise QuantizationConfigError(
            f"module '{name}' (LeakyReLU): no exact route to hls4ml (Brevitas has no quantized LeakyReLU, and "
            "hls4ml rounds alpha*x in its own types); use a ReLU"
        )
    if isinstance(module, qnn.QuantIdentity) and "activation" in named:
        quantizer = from_text(roles["activation"], f"{name}.activation")
        return qnn.QuantIdentity(act_quant=brevitas_quant(quantizer, "activation"))
    if type(module) in (nn.ReLU, nn.ReLU6) or (isinstance(module, qnn.QuantReLU) and "activation" in named):
        return _quantized_relu(name, module, roles.get("activation"), "activation" in named)
    return None


def _quantized_relu(name: str, module, text: str | None, named: bool):
    """The QuantReLU of a ReLU (or ReLU6) with the activation quantizer `text`; None where the text computes
    another function and the layer does not name it (the ReLU stays float, exact on its input's grid)."""
    if text is None or not text.startswith("quantized_relu"):
        if named:
            raise QuantizationConfigError(
                f"quantization.layers.{name}.activation: {text!r} does not compute a ReLU; use quantized_relu"
            )
        return None
    quantizer = from_text(text, f"{name}.activation")
    if type(module) is nn.ReLU6 and quantizer.fixed.hi > 6:
        raise QuantizationConfigError(
            f"module '{name}' (ReLU6): its quantizer {text!r} reaches {quantizer.fixed.hi:g}, past ReLU6's 6; "
            "give it at most 2 integer bits (it then saturates first, and computes what ReLU6 does)"
        )
    return _brevitas().QuantReLU(act_quant=brevitas_quant(quantizer, "activation"))


def _with_conversions(model, spec: QuantizationSpec) -> QuantizationSpec:
    """`spec` with texts for each Brevitas layer of `model` that `spec.layers` does not name and whose quantizers
    no fixed-point type holds as they are: a float scale (its nearest power-of-two type of the same bits), a
    float bias beside a quantized kernel (a folded BatchNorm's shift: the default bias), a bias at its input's
    scale (`_input_scaled_bias`); one note each."""
    layers = {name: dict(roles) for name, roles in spec.layers.items()}
    converted = {}
    for name, module in model.named_modules():
        if name in layers or not type(module).__module__.startswith("brevitas.nn"):
            continue
        found = _own_quantizers(name, module)
        if any(_converts(role, q, found) for role, q in found.items()):
            converted[name] = found
            layers[name] = {role: text for role, q in found.items() if (text := _text(q, role, spec)) is not None}
    for name, found in converted.items():  # the activations' types are known now: a bias at its input's scale
        if isinstance(found.get("bias"), ScaledQuantizer) and found["bias"].input_scaled:
            layers[name]["bias"] = _input_scaled_bias(model, name, found["bias"], layers)
        changed = ", ".join(f"{role} {found[role] or 'float'} -> {layers[name][role]}" for role in layers[name])
        scaled = any(isinstance(q, ScaledQuantizer) and not q.input_scaled for q in found.values())
        why = "nearest power-of-two scale; QAT recovers the rest" if scaled else "the fixed-point type it computes"
        warnings.warn(f"{name}: {changed} ({why})", FpgapruneNote, 2)
    return QuantizationSpec(spec.default, layers, spec.origin)


def _converts(role: str, quantizer, found: dict) -> bool:
    """Whether a Brevitas layer's quantizer for `role` is converted: a float scale, or a float bias beside a
    quantized kernel."""
    return isinstance(quantizer, ScaledQuantizer) or (role == "bias" and quantizer is None and found.get("kernel"))


def _own_quantizers(name: str, module) -> dict:
    """{role: what its quantizer computes (None: float)} of a Brevitas layer's weights or activation."""
    proxies = {"kernel": "weight_quant", "bias": "bias_quant", "activation": "act_quant"}
    found = {
        role: read_proxy(getattr(module, attribute, None), f"layer '{name}' ({role})")
        for role, attribute in proxies.items()
        if hasattr(module, attribute)
    }
    if not isinstance(getattr(module, "bias", None), torch.Tensor):
        found.pop("bias", None)
    return found


def _text(quantizer, role: str, spec: QuantizationSpec) -> str | None:
    """The text of a role's quantizer, converted: its own type, the nearest power-of-two one, or the default
    bias for a float one (None: the role stays float, or a bias at its input's scale, typed once the
    activations are)."""
    if role == "bias" and quantizer is None:
        return spec.default.get("bias")
    if quantizer is None or (isinstance(quantizer, ScaledQuantizer) and quantizer.input_scaled):
        return None
    return text_of(quantizer.fixed if quantizer.fixed is not None else quantizer.nearest())


def _input_scaled_bias(model, name: str, bias: ScaledQuantizer, layers: dict) -> str:
    """The text of a bias whose scale is its input's times its weight's (Brevitas' Int32Bias, Int8Bias): its own
    bits on the grid of that product, where the layer reads a Brevitas activation quantizer's output (through
    layers that keep values: Flatten, max pooling, Dropout); one line naming the layer otherwise."""
    source = _reading(model, name)
    activation = _activation_type(model, source, layers) if source is not None else None
    kernel = from_text(layers[name]["kernel"], f"{name}.kernel").fixed if "kernel" in layers[name] else None
    if activation is None or kernel is None:
        raise QuantizationConfigError(
            f"layer '{name}': its bias quantizer ({bias}) takes the scale of its input, which comes from no "
            "Brevitas activation quantizer of a fixed-point type; put a QuantIdentity(return_quant_tensor=True) "
            f"before it, or give it a bias of its own scale (quantization.layers.{name}.bias)"
        )
    frac = activation.frac + kernel.frac
    return text_of(FixedType(bias.bits, bias.bits - frac, True))


_KEEP_VALUES = ("Flatten", "Dropout", "Identity", "MaxPooling1D", "MaxPooling2D")


def _reading(model, name: str) -> str | None:
    """The layer whose output `name` reads, through layers that keep values; None where it reads several or the
    model's input."""
    _, inbound, _ = graph_edges(model)
    sources = inbound.get(name, [])
    while len(sources) == 1 and role_of(model.get_submodule(sources[0])) in _KEEP_VALUES:
        sources = inbound.get(sources[0], [])
    return sources[0] if len(sources) == 1 else None


def _activation_type(model, name: str, layers: dict) -> FixedType | None:
    """The fixed-point type of a Brevitas activation quantizer's outputs (as converted, where it is)."""
    text = layers.get(name, {}).get("activation")
    if text is not None:
        return from_text(text, f"{name}.activation").fixed
    quantizer = read_proxy(getattr(model.get_submodule(name), "act_quant", None), f"layer '{name}' (activation)")
    return getattr(quantizer, "fixed", None)


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
    for name, source in batchnorm_sources(model).items():
        if source is None:
            continue
        before, batchnorm = model.get_submodule(source), model.get_submodule(name)
        fuse = fuse_linear_bn_eval if isinstance(before, nn.Linear) else fuse_conv_bn_eval
        _replace(model, source, fuse(copy.deepcopy(before), batchnorm))
        _replace(model, name, nn.Identity())


def batchnorm_sources(model) -> dict:
    """{BatchNorm layer: the Linear/Conv (float or Brevitas') it folds into, or None where it cannot fold: its
    input is not one, or that one feeds another layer too}."""
    layers, inbound, _ = graph_edges(model)
    readers = {}
    for name, sources in inbound.items():
        for source in sources:
            readers.setdefault(source, []).append(name)
    found = {}
    for view in layers:
        if not isinstance(view.module, _BATCHNORMS):
            continue
        sources = inbound[view.name]
        alone = len(sources) == 1 and readers.get(sources[0]) == [view.name]
        linear = alone and isinstance(model.get_submodule(sources[0]), FLOAT_LAYERS)
        found[view.name] = sources[0] if linear else None
    return found


def unfoldable_batchnorm(model) -> str | None:
    """One line naming the first BatchNorm that cannot fold into the layer before it (a PyTorch model's twin folds
    every one), or None."""
    for name, source in batchnorm_sources(as_modules(model, LayerTracer)).items():
        if source is None:
            return (
                f"module '{name}' ({type(model.get_submodule(name)).__name__}): a BatchNorm folds into the Conv/Linear "
                "right before it, and this one follows none that feeds it alone (hls4ml would compute it with "
                "unquantized parameters); move it right after a Conv/Linear"
            )
    return None


def quantizer_sources(model, spec, default_given: bool = True) -> dict:
    """{layer: where its quantizers come from}: its own (a Brevitas layer, kept), `quantization.layers`, or the
    default."""
    spec = spec if isinstance(spec, QuantizationSpec) else QuantizationSpec.from_dict(spec)
    default = "quantization.default" if default_given else "the built-in default (quantization.default unset)"
    sources, inside = {}, ()
    for name, module in as_modules(model, LayerTracer).named_modules():
        if name.startswith(inside):  # a Brevitas layer's own parts (its quantizer's nn.ReLU) are not layers
            continue
        if type(module).__module__.startswith("brevitas.nn"):
            inside = (*inside, f"{name}.")
        named = sorted(spec.layers.get(name, {}))
        if type(module).__module__.startswith("brevitas.nn") and not named:
            sources[name] = "its own quantizers, kept"
        elif isinstance(module, FLOAT_LAYERS) or (
            type(module) in (nn.ReLU, nn.ReLU6)
            and str(spec.for_layer(name).get("activation", "")).startswith("quantized_relu")
        ):
            sources[name] = f"quantization.layers ({', '.join(named)}), else {default}" if named else default
    return sources
