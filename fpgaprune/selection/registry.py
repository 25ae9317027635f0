"""Which weights of which layer can be held (in the manner of tfmot's prune_registry), read from the one table
of layer kinds (`fpgaprune.layer_kinds`): a layer's kind comes from the classes in its MRO, whichever front end
bound them.

Each maskable weight names the layer attribute that holds its variable and the constructor argument whose
constraint the optimizer applies after every update; that constraint is where fpgaprune's hold lives.
"""

from fpgaprune.layer_kinds import BY_NAME, MaskableWeight, kind_of

__all__ = ["MaskableWeight", "default_weight", "maskable_weights", "supported_classes"]


def maskable_weights(layer_or_name) -> tuple[MaskableWeight, ...] | None:
    """The maskable weights of a layer (or a layer class, or a class name), or None when it is not supported."""
    kind = kind_of(layer_or_name)
    return kind.weights if kind else None


def default_weight(layer_or_name) -> str | None:
    """The weight that `layer[...]` without a variable name means, or None when it must be named."""
    kind = kind_of(layer_or_name)
    return kind.default_weight if kind else "kernel"


def supported_classes() -> str:
    """The kinds fpgaprune handles (their float classes, their quantized twins and subclasses too)."""
    return ", ".join(BY_NAME)
