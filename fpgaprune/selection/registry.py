"""Which weights of which layer class can be held (in the manner of tfmot's prune_registry), read from the
one table of layer kinds (`fpgaprune.layer_kinds`).

Each maskable weight names the layer attribute that holds its variable and the constructor argument whose
constraint the optimizer applies after every update; that constraint is where fpgaprune's hold lives.
"""

from fpgaprune.layer_kinds import BY_CLASS, MaskableWeight

__all__ = ["MASKABLE_WEIGHTS", "MaskableWeight", "default_weight", "maskable_weights", "supported_classes"]

MASKABLE_WEIGHTS: dict[str, tuple[MaskableWeight, ...]] = {name: kind.weights for name, kind in BY_CLASS.items()}


def maskable_weights(class_name: str) -> tuple[MaskableWeight, ...] | None:
    """The maskable weights of a layer class, or None when the class is not supported."""
    return MASKABLE_WEIGHTS.get(class_name)


def default_weight(class_name: str) -> str | None:
    """The weight that `layer[...]` without a variable name means, or None when it must be named."""
    kind = BY_CLASS.get(class_name)
    return kind.default_weight if kind else "kernel"


def supported_classes() -> str:
    return ", ".join(MASKABLE_WEIGHTS)
