"""The hold mechanism: chosen entries of weights kept at their targets through training, saving and export."""

from abc import ABC, abstractmethod


class Holds(ABC):
    """The hold mechanism."""

    @abstractmethod
    def hold_of(self, variable):
        """The hold (`masking.held.HeldEntries`) a weight carries, or None."""

    @abstractmethod
    def with_holds(self, model, groups: dict, keep_holds: bool):
        """A copy of `model` whose weights in `groups` ({(layer, weight): [HoldEntry]}) are held (keep_holds), or
        have the held values baked in and no hold (finalize)."""

    @abstractmethod
    def enforce(self, model) -> None:
        """Re-assign every held entry now (after weights were set from outside the training loop)."""

    def hold_constraint(self):
        """The class users hold entries with by hand in its framework (`fp.HoldConstraint`), or None."""
        return None
