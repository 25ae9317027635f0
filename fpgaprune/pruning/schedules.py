"""Pruning schedules: callables from the optimizer step to (update the mask now?, target sparsity)."""

from abc import ABC, abstractmethod

from fpgaprune.errors import FpgapruneError


class PruningSchedule(ABC):
    @abstractmethod
    def __call__(self, step: int) -> tuple[bool, float]:
        """(update the mask at this step?, the target sparsity at this step)."""

    def get_config(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_config(cls, config: dict) -> "PruningSchedule":
        return cls(**config)


def _check_fraction(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise FpgapruneError(f"{name} must lie in [0, 1], got {value}")


class OneShot(PruningSchedule):
    """Prune to `sparsity` once, at `step`."""

    def __init__(self, sparsity: float, step: int = 0):
        _check_fraction("sparsity", sparsity)
        self.sparsity, self.step = sparsity, step

    def __call__(self, step: int) -> tuple[bool, float]:
        return step == self.step, self.sparsity


class PolynomialDecay(PruningSchedule):
    """Zhu & Gupta (2017): s_t = s_f + (s_i - s_f) (1 - (t - t0) / (n dt))^e, updated every `frequency` steps
    from `begin_step` (t0) to `end_step` (t0 + n dt)."""

    def __init__(self, initial_sparsity: float, target_sparsity: float, begin_step: int, end_step: int,
                 frequency: int = 100, exponent: float = 3.0):
        _check_fraction("initial_sparsity", initial_sparsity)
        _check_fraction("target_sparsity", target_sparsity)
        if end_step <= begin_step or begin_step < 0:
            raise FpgapruneError(f"need 0 <= begin_step < end_step, got {begin_step} and {end_step}")
        if frequency < 1:
            raise FpgapruneError(f"frequency must be >= 1, got {frequency}")
        self.initial_sparsity, self.target_sparsity = initial_sparsity, target_sparsity
        self.begin_step, self.end_step, self.frequency, self.exponent = begin_step, end_step, frequency, exponent

    def sparsity(self, step: int) -> float:
        progress = min(1.0, max(0.0, (step - self.begin_step) / (self.end_step - self.begin_step)))
        span = self.initial_sparsity - self.target_sparsity
        return self.target_sparsity + span * (1.0 - progress) ** self.exponent

    def __call__(self, step: int) -> tuple[bool, float]:
        in_range = self.begin_step <= step <= self.end_step
        on_beat = (step - self.begin_step) % self.frequency == 0 or step == self.end_step
        return in_range and on_beat, self.sparsity(step)
