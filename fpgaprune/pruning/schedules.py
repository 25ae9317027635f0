"""Pruning schedules: callables from the optimizer step to (update the mask now?, target sparsity).

A sparsity is one number for every pruned layer, or {layer: sparsity}; a schedule then runs each layer to
its own target on the same steps.
"""

from abc import ABC, abstractmethod
from typing import Union

from fpgaprune.errors import FpgapruneError

Sparsity = Union[float, dict]


class PruningSchedule(ABC):
    @abstractmethod
    def __call__(self, step: int) -> tuple[bool, Sparsity]:
        """(update the mask at this step?, the target sparsity at this step)."""

    def get_config(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_config(cls, config: dict) -> "PruningSchedule":
        return cls(**config)


def _check_fraction(name: str, value: Sparsity) -> None:
    for layer, fraction in value.items() if isinstance(value, dict) else [(None, value)]:
        if not 0.0 <= fraction <= 1.0:
            where = f"{name}[{layer!r}]" if layer is not None else name
            raise FpgapruneError(f"{where} must lie in [0, 1], got {fraction}")


def per_layer(value: Sparsity, layer: str) -> float:
    """The sparsity of `layer` in a one-for-all or per-layer sparsity."""
    return value[layer] if isinstance(value, dict) else value


class OneShot(PruningSchedule):
    """Prune to `sparsity` (one, or {layer: sparsity}) once, at `step`."""

    def __init__(self, sparsity: Sparsity, step: int = 0):
        _check_fraction("sparsity", sparsity)
        self.sparsity, self.step = sparsity, step

    def __call__(self, step: int) -> tuple[bool, Sparsity]:
        return step == self.step, self.sparsity


class PolynomialDecay(PruningSchedule):
    """Zhu & Gupta (2017): s_t = s_f + (s_i - s_f) (1 - (t - t0) / (n dt))^e, updated every `frequency` steps
    from `begin_step` (t0) to `end_step` (t0 + n dt). With {layer: s_f}, each layer follows its own curve."""

    def __init__(
        self,
        initial_sparsity: Sparsity,
        target_sparsity: Sparsity,
        begin_step: int,
        end_step: int,
        frequency: int = 100,
        exponent: float = 3.0,
    ):
        _check_fraction("initial_sparsity", initial_sparsity)
        _check_fraction("target_sparsity", target_sparsity)
        if isinstance(initial_sparsity, dict) and (
            not isinstance(target_sparsity, dict) or set(initial_sparsity) != set(target_sparsity)
        ):
            raise FpgapruneError("a per-layer initial_sparsity needs a per-layer target_sparsity for the same layers")
        if end_step <= begin_step or begin_step < 0:
            raise FpgapruneError(f"need 0 <= begin_step < end_step, got {begin_step} and {end_step}")
        if frequency < 1:
            raise FpgapruneError(f"frequency must be >= 1, got {frequency}")
        self.initial_sparsity, self.target_sparsity = initial_sparsity, target_sparsity
        self.begin_step, self.end_step, self.frequency, self.exponent = begin_step, end_step, frequency, exponent

    def sparsity(self, step: int) -> Sparsity:
        progress = min(1.0, max(0.0, (step - self.begin_step) / (self.end_step - self.begin_step)))
        decay = (1.0 - progress) ** self.exponent

        def curve(initial: float, target: float) -> float:
            return target + (initial - target) * decay

        if isinstance(self.target_sparsity, dict):
            return {
                layer: curve(per_layer(self.initial_sparsity, layer), target)
                for layer, target in self.target_sparsity.items()
            }
        return curve(self.initial_sparsity, self.target_sparsity)

    def __call__(self, step: int) -> tuple[bool, Sparsity]:
        in_range = self.begin_step <= step <= self.end_step
        on_beat = (step - self.begin_step) % self.frequency == 0 or step == self.end_step
        return in_range and on_beat, self.sparsity(step)
