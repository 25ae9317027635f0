"""A module into hls4ml's IR through hls4ml's PyTorch converter (torch.fx).

The export traces the module into a GraphModule (`exported_graph`: training-only Identity/Dropout layers taken
out), names its layers as C++ identifiers when asked (`renamed`: `features.3` -> `features_3`, which is also
what hls4ml names the node), and hands hls4ml a plain copy (`plain_copy`): each quantized layer becomes its
PyTorch layer holding the quantized values (held zeros exact), a QuantReLU a ReLU and a QuantIdentity an
`ActivationQuantizer`, converted into hls4ml's linear Activation. What makes C-sim exact is not the copy but the
types fpgaprune derives from the quantizers (`hls.precision`), which set each node's result type: hls4ml rounds
and saturates into them as Brevitas does.

Layout: hls4ml is channels-last. The export asks for `ChannelsLastConversion: internal`, so the design takes
channels-last inputs (no transpose on chip, io_stream included); C-sim and the test bench transpose the user's
NCHW arrays (`channels_last`).
"""

import copy

import numpy as np
import torch
from torch import nn

from fpgaprune.errors import ModelTypeError
from fpgaprune.frontends.torch.graph import LayerTracer
from fpgaprune.frontends.torch.layers import INPUT_SHAPE

_DROPPED = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d)
CHANNELS_LAST = "internal"


def channels_last(x):
    """Inputs `(n, c, ...)` as the exported design takes them: `(n, ..., c)`."""
    x = np.asarray(x)
    return np.moveaxis(x, 1, -1) if x.ndim >= 3 else x


def exported_graph(model, input_shape=None) -> torch.fx.GraphModule:
    """The module as a GraphModule of its layers (names kept), without its training-only layers, in eval mode."""
    graph = LayerTracer().trace(model)
    for node in list(graph.nodes):
        if node.op == "call_module" and isinstance(model.get_submodule(node.target), _DROPPED):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    exported = torch.fx.GraphModule(model, graph, class_name=type(model).__name__)
    exported.eval()
    setattr(exported, INPUT_SHAPE, tuple(input_shape) if input_shape is not None else getattr(model, INPUT_SHAPE, None))
    if getattr(exported, INPUT_SHAPE) is not None:
        _plain_reshapes(exported)
    return exported


_RESHAPES = {("call_method", "view"), ("call_method", "reshape"), ("call_method", "flatten")}
_RESHAPES |= {("call_function", torch.reshape), ("call_function", torch.flatten)}


def _plain_reshapes(exported: torch.fx.GraphModule) -> None:
    """Each reshape of the forward in the form hls4ml's converter reads: to one row per sample
    (`x.view(x.size(0), -1)`, `x.reshape(len(x), -1)`, `torch.flatten(x, start_dim=1)`) `torch.flatten(x, 1)`;
    any other `x.view` of its shape as constants (the converter reads no `x.size()`)."""
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(exported).propagate(torch.zeros((1, *getattr(exported, INPUT_SHAPE))))
    graph, changed = exported.graph, False
    for node in list(graph.nodes):
        if (node.op, node.target) not in _RESHAPES or not isinstance(node.args[0], torch.fx.Node):
            continue
        source, shape = node.args[0], tuple(node.meta["tensor_meta"].shape)
        with graph.inserting_after(node):
            if len(shape) == 2:
                replacement = graph.call_function(torch.flatten, (source, 1))
            else:
                replacement = graph.call_method("view", (source, -1, *shape[1:]))
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        changed = True
    if changed:
        graph.eliminate_dead_code()  # the `x.size(0)` calls left unread
        exported.recompile()


def renamed(model, names: dict) -> torch.fx.GraphModule:
    """A GraphModule whose layers named in `names` ({original: new}) are modules of that name at its top."""
    exported = model if isinstance(model, torch.fx.GraphModule) else exported_graph(model)
    graph, modules = copy.deepcopy(exported.graph), {}
    for node in graph.nodes:
        if node.op == "call_module":
            modules[names.get(node.target, node.target)] = exported.get_submodule(node.target)
            node.target = names.get(node.target, node.target)
        elif node.op == "get_attr":
            modules[node.target] = _attribute(exported, node.target)
    result = torch.fx.GraphModule(modules, graph, class_name=exported.__class__.__name__)
    setattr(result, INPUT_SHAPE, getattr(exported, INPUT_SHAPE, None))
    return result.eval()


def _attribute(module, target: str):
    owner, _, name = target.rpartition(".")
    return getattr(module.get_submodule(owner) if owner else module, name)


def input_name(model) -> str:
    """hls4ml names the input node after the forward's argument (`x`; a Sequential's `input_1`)."""
    return next(node.name for node in LayerTracer().trace(model).nodes if node.op == "placeholder")


def input_shape_of(model) -> tuple:
    shape = getattr(model, INPUT_SHAPE, None)
    if shape is None:
        raise ModelTypeError("a PyTorch model's export needs one sample's input shape: pass x to fp.export")
    return tuple(int(d) for d in shape)
