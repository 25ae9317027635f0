"""A module's graph of layers, from `torch.fx`'s symbolic trace: each layer's inbound layers (through the
functional calls between them: `torch.flatten`, `F.relu`, `+`) and the layers that give the outputs."""

import torch.fx

from fpgaprune.frontends.torch.layers import layer_views


def graph_edges(model) -> tuple[list, dict, set]:
    """(the layers the forward calls, in order; {layer: its inbound layers}; the output layers)."""
    views = {view.name: view for view in layer_views(model)}
    feeds, inbound, order, outputs = {}, {}, [], []
    for node in torch.fx.symbolic_trace(model).graph.nodes:
        sources = list(dict.fromkeys(s for arg in node.all_input_nodes for s in feeds.get(arg, ())))
        if node.op == "call_module" and node.target in views:
            inbound[node.target], feeds[node] = sources, (node.target,)
            order.append(node.target)
        elif node.op == "output":
            outputs = sources
        else:
            feeds[node] = tuple(sources)
    return [views[name] for name in order], inbound, set(outputs)
