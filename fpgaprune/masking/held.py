"""The framework-neutral part of a hold: which entries of one weight are held, and at what (`compiled`).

Each front end makes it its framework's mechanism: for Keras, a constraint that the optimizer applies after
every update (`frontends/tensorflow/holds.py`); the rest of fpgaprune only reads `entries` and `compiled`, and
asks `is_hold` of whatever a weight carries.
"""

import numpy as np

from fpgaprune.masking.manifest import HoldEntry, compile_entries


class HeldEntries:
    """Hold the entries named by `entries` at their targets; `inner` is the weight's own constraint, if any."""

    def __init__(self, entries, inner=None):
        entries = tuple(e if isinstance(e, HoldEntry) else HoldEntry.from_json(e, "HoldConstraint") for e in entries)
        if isinstance(inner, dict):
            inner = self.deserialize_inner(inner)
        # plain attributes, set as such: a front end's hold may be a framework object too (a PyTorch module),
        # whose own `__setattr__` these need not pass through
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "inner", inner)

    def deserialize_inner(self, config: dict):
        """The weight's own constraint from its saved config. Abstract: each front end's hold says how."""
        raise NotImplementedError(f"{type(self).__name__} cannot read a saved inner constraint")

    def serialize_inner(self):
        """The weight's own constraint as a config to save. Abstract: each front end's hold says how."""
        raise NotImplementedError(f"{type(self).__name__} cannot save its inner constraint")

    def compiled(self, shape) -> tuple[np.ndarray, np.ndarray]:
        """The (mask, target) arrays for a weight of `shape`."""
        return compile_entries(self.entries, tuple(int(n) for n in shape))

    def set_entries(self, entries) -> None:
        """Replace the held entries in place (a pruning schedule grows them); a front end whose hold keeps state
        in its framework updates it (`entries_changed`)."""
        object.__setattr__(self, "entries", tuple(entries))
        self.entries_changed()

    def entries_changed(self) -> None:
        pass

    def get_config(self):
        return {"entries": [entry.to_json() for entry in self.entries], "inner": self.serialize_inner()}


def is_hold(constraint) -> bool:
    """Whether what a weight carries is an fpgaprune hold (of any front end)."""
    return isinstance(constraint, HeldEntries)
