"""Which weights of which layer can be held (in the manner of tfmot's prune_registry), read from the one table
of layer kinds (`fpgaprune.model.layer_kinds`): a layer's kind comes from the classes in its MRO, whichever front end
bound them.

Each maskable weight names the layer attribute that holds its variable and the constructor argument whose
constraint the optimizer applies after every update; that constraint is where fpgaprune's hold lives.
"""

from fpgaprune.model.layer_kinds import BY_NAME, MaskableWeight, bound_classes, kind_of

__all__ = ["MaskableWeight", "default_weight", "maskable_weights", "supported_classes"]


def maskable_weights(layer_or_name) -> tuple[MaskableWeight, ...] | None:
    """The maskable weights of a layer (or a layer class, or a class name), or None when it is not supported."""
    kind = kind_of(layer_or_name)
    return kind.weights if kind else None


def default_weight(layer_or_name) -> str | None:
    """The weight that `layer[...]` without a variable name means, or None when it must be named."""
    kind = kind_of(layer_or_name)
    return kind.default_weight if kind else "kernel"


def supported_classes(layer=None) -> str:
    """The kinds fpgaprune handles (their float classes, their quantized twins and subclasses too); for a layer of
    a framework whose classes are named otherwise (PyTorch), that framework's classes bound to them."""
    package = layer.package if getattr(type(layer), "RECORDED", False) else None
    cls = getattr(layer, "kind_class", None)
    if package is not None or cls is not None:
        package = package or cls.__module__.split(".")[0]
        names = sorted({c.__name__ for c, kind in bound_classes().items() if kind and c.__module__.startswith(package)})
        return ", ".join(names) if names else ", ".join(BY_NAME)
    return ", ".join(BY_NAME)
