"""The hold mechanism: chosen entries of weights kept at their targets through training, saving and export."""

from abc import ABC, abstractmethod


class Holds(ABC):
    """The hold mechanism."""

    @abstractmethod
    def with_holds(self, model, groups: dict, keep_holds: bool):
        """A copy of `model` whose weights in `groups` ({(layer, weight): [HoldEntry]}) are held (keep_holds), or
        have the held values baked in and no hold (finalize)."""

    def set_hold_entries(self, model, layer: str, weight: str, entries) -> None:
        """Replace in place the entries of the hold that the model's weight `layer/weight` carries (a pruning
        schedule grows them)."""
        from fpgaprune.frontends.layer_reading import variable_of
        from fpgaprune.model.layer_kinds import kind_of

        found = next(candidate for candidate in self.layers(model) if candidate.name == layer)
        variable = variable_of(next(w for w in kind_of(found).weights if w.name == weight), found)
        self.hold_of(variable).set_entries(entries)

    @abstractmethod
    def enforce(self, model) -> None:
        """Re-assign every held entry now (after weights were set from outside the training loop)."""
