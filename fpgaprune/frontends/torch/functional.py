"""The activations a forward calls as functions, seen as layers: `torch.relu(self.fc1(x))`, `F.relu(x,
inplace=True)`, `x.relu()`, `F.relu6`, `torch.sigmoid`, `torch.tanh`, `torch.softmax`, `F.leaky_relu` (and
their method forms). The graph shows each as a layer of its module class's role (`graph.py`), and the quantized
twin makes each a submodule, so that it is quantized exactly as an `nn.ReLU` module is (`as_modules`).

Names: an activation of a module's output is named after that module, `fc1_relu` for `torch.relu(self.fc1(x))`
(a nested module's dots become underscores: `features_3_relu`); any other keeps torch.fx's name of the call
(`relu_1`). That name is what `quantization.layers` addresses, and what the export, the report and C-sim call it.
"""

import copy

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

_RELU = (torch.relu, torch.relu_, F.relu, F.relu_)
_FUNCTIONS = {
    **{target: "relu" for target in _RELU},
    F.relu6: "relu6",
    torch.sigmoid: "sigmoid",
    F.sigmoid: "sigmoid",
    torch.tanh: "tanh",
    F.tanh: "tanh",
    torch.softmax: "softmax",
    F.softmax: "softmax",
    F.leaky_relu: "leaky_relu",
}
_METHODS = {"relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "softmax": "softmax"}
# positional arguments after the tensor, by function: (name, default)
_ARGUMENTS = {"softmax": ("dim", None), "leaky_relu": ("negative_slope", 0.01)}


def activation_name(node) -> str | None:
    """The activation a torch.fx node computes (relu, relu6, sigmoid, tanh, softmax, leaky_relu), or None."""
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    if node.op == "call_method":
        return _METHODS.get(node.target)
    return None


def activation_module(node) -> nn.Module:
    """The module that computes what the call computes."""
    function = activation_name(node)
    argument, default = _ARGUMENTS.get(function, (None, None))
    value = node.args[1] if len(node.args) > 1 else node.kwargs.get(argument, default)
    if function == "softmax":
        return nn.Softmax(dim=value)
    if function == "leaky_relu":
        return nn.LeakyReLU(value)
    return {"relu": nn.ReLU, "relu6": nn.ReLU6, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}[function]()


def activation_names(graph: torch.fx.Graph, taken) -> dict:
    """{node: its layer name} of each activation call in `graph`; `taken`: the module names already in use."""
    names, used = {}, set(taken)
    for node in graph.nodes:
        function = activation_name(node)
        if function is None:
            continue
        source = node.args[0] if node.args else None
        follows_module = isinstance(source, torch.fx.Node) and source.op == "call_module"
        name = f"{source.target.replace('.', '_')}_{function}" if follows_module else node.name
        base, count = name, 1
        while name in used:
            name, count = f"{base}_{count}", count + 1
        names[node] = name
        used.add(name)
    return names


class TracedModule(torch.fx.GraphModule):
    """A GraphModule that keeps what fpgaprune records on a module (`fpgaprune_*`: its architecture, one sample's
    input shape) through `copy.deepcopy`, which a plain GraphModule rebuilds without them (holds copy modules)."""

    def __deepcopy__(self, memo):
        copied = super().__deepcopy__(memo)
        for key, value in self.__dict__.items():
            if key.startswith("fpgaprune_"):
                copied.__dict__[key] = copy.deepcopy(value, memo)
        return copied


def as_modules(model, tracer_class):
    """`model` itself when its forward calls no activation function; else a GraphModule of the same modules
    (names kept) in which each such call is a module named as `activation_names` names it."""
    graph = tracer_class().trace(model)
    names = activation_names(graph, (name for name, _ in model.named_modules()))
    if not names:
        return model
    added = {}
    for node, name in names.items():
        added[name] = activation_module(node)
        with graph.inserting_after(node):
            call = graph.call_module(name, (node.args[0],))
        node.replace_all_uses_with(call)
        graph.erase_node(node)
    modules = {
        node.target: added[node.target] if node.target in added else _attribute(model, node.target)
        for node in graph.nodes
        if node.op in ("call_module", "get_attr")
    }
    converted = TracedModule(modules, graph, class_name=type(model).__name__)
    for key, value in vars(model).items():  # what fpgaprune recorded on the module (architecture, input shape)
        if key.startswith("fpgaprune_"):
            converted.__dict__[key] = value
    return converted.train(model.training)


def _attribute(module, target: str):
    owner, _, name = target.rpartition(".")
    return getattr(module.get_submodule(owner) if owner else module, name)
