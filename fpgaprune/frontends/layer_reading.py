"""What the front ends read off a framework layer object: a weight's variable under the attribute its framework
gives it, and the activation a layer applies inside it. Framework code: nothing outside `frontends/` reads a
layer object (the stages read the record)."""

from fpgaprune.model.layer_kinds import attribute_of


def variable_of(weight, layer):
    """The layer's variable for `weight` (a `layer_kinds.MaskableWeight`; None when absent, e.g. a bias with
    use_bias=False), under the attribute its framework gives it (Keras 3's DepthwiseConv2D calls its
    depthwise_kernel `kernel`), on the layer or on its recurrent cell."""
    owner = layer.cell if weight.attribute.startswith("cell.") else layer
    return getattr(owner, attribute_of(layer, weight.name), None)


def activation_name(layer) -> str:
    """The name of the activation the layer applies (`activation`), lower case; "" for none."""
    activation = getattr(layer, "activation", None)
    return str(
        getattr(activation, "__name__", None) or type(activation).__name__ if activation is not None else ""
    ).lower()


def has_inner_activation(layer) -> bool:
    """Whether the layer applies a non-linear activation inside it that can be swapped out for its linear
    output (a recurrent layer's activations are internal: its `activation` is a read-only property)."""
    if isinstance(getattr(type(layer), "activation", None), property) or getattr(layer, "kernel", None) is None:
        return False
    return activation_name(layer) not in ("", "linear", "none", "nonetype")
