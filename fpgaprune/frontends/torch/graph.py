"""A module's graph of layers, from `torch.fx`'s symbolic trace: each layer's inbound layers (through the
functional calls between them: `torch.flatten`, `.view`) and the layers that give the outputs. PyTorch's and
Brevitas' modules (and fpgaprune's own) are leaves, as in hls4ml's tracer; merges (`+`, `torch.cat`) and
activations called as functions (`torch.relu`: `functional.py`) are layers of the graph too."""

import operator

import torch
import torch.fx

from fpgaprune.frontends.torch.functional import activation_module, activation_names
from fpgaprune.frontends.torch.layers import MERGE_FUNCTIONS, TorchFunction, layer_views

LEAF_MODULES = ("torch.nn", "torch.ao.nn", "brevitas.nn", "fpgaprune.frontends.torch")


class LayerTracer(torch.fx.Tracer):
    """Traces through containers and the user's own modules, never into a layer."""

    def is_leaf_module(self, module, qualified_name: str) -> bool:
        if isinstance(module, torch.nn.Sequential):
            return False
        return type(module).__module__.startswith(LEAF_MODULES) or super().is_leaf_module(module, qualified_name)


def traced(model) -> torch.fx.GraphModule:
    """The module as a GraphModule whose call_module nodes are its layers."""
    return torch.fx.GraphModule(model, LayerTracer().trace(model))


_MERGES = {operator.add: "add", torch.add: "add", torch.cat: "cat", torch.concat: "cat"}


def graph_edges(model) -> tuple[list, dict, set]:
    """(the layers the forward calls, in order, with its functional merges (`+`, `torch.cat`) and activations
    (`torch.relu`) as `TorchFunction` layers; {layer: its inbound layers}; the output layers)."""
    views = {view.name: view for view in layer_views(model)}
    graph = LayerTracer().trace(model)
    activations = activation_names(graph, (name for name, _ in model.named_modules()))
    feeds, inbound, order, outputs = {}, {}, [], []
    for node in graph.nodes:
        sources = list(dict.fromkeys(s for arg in node.all_input_nodes for s in feeds.get(arg, ())))
        merge = _MERGES.get(node.target) if node.op == "call_function" else None
        name = node.target if node.op == "call_module" and node.target in views else activations.get(node)
        if merge is not None and len(node.all_input_nodes) > 1:  # a merge of two tensors, not `x + 1`
            name = node.name
            views[name] = TorchFunction(name, MERGE_FUNCTIONS[merge])
        elif node in activations:
            views[name] = TorchFunction(name, type(activation_module(node)))
        if name is not None and name in views:
            inbound[name], feeds[node] = sources, (name,)
            order.append(name)
        elif node.op == "output":
            outputs = sources
        else:
            feeds[node] = tuple(sources)
    return [views[name] for name in order], inbound, set(outputs)
