"""Iterative magnitude pruning with weight rewinding (lottery ticket; Frankle & Carbin 2019, Frankle et al. 2020).

Each round: train, prune `rate` of the groups that remain, rewind the survivors to their initial weights
(or to those at the end of epoch `rewind_epoch` of the first round). A last training run follows the rounds.
"""

from typing import Callable

from fpgaprune.errors import FpgapruneError
from fpgaprune.framework import front_end_of
from fpgaprune.pruning.pruner import Pruner
from fpgaprune.pruning.schedules import Sparsity
from fpgaprune.training.hooks import TrainingHook


class _CaptureAtEpoch(TrainingHook):
    def __init__(self, epoch: int):
        super().__init__()
        self.epoch, self.weights = epoch, None

    def epoch_end(self, run, epoch, loss):
        if epoch + 1 == self.epoch:
            self.weights = run.weights()


class LotteryTicket:
    """`train(model, callbacks)` compiles and fits the model it is given (a fresh optimizer each round).
    `rate` is one fraction, or {layer: fraction}, of the remaining weights pruned per round."""

    def __init__(self, pruner: Pruner, rounds: int, rate: Sparsity, rewind_epoch: int = 0):
        rates = rate.values() if isinstance(rate, dict) else [rate]
        if rounds < 1 or not all(0.0 <= r < 1.0 for r in rates) or rewind_epoch < 0:
            raise FpgapruneError(
                f"lottery ticket needs rounds >= 1, 0 <= rate < 1, rewind_epoch >= 0; got "
                f"{rounds}, {rate}, {rewind_epoch}"
            )
        self.pruner, self.rounds, self.rate, self.rewind_epoch = pruner, rounds, rate, rewind_epoch
        self.rewind_weights, self.front = None, None  # the front end: resolved once, by `start`
        self.sparsities: list = []

    @classmethod
    def reaching(cls, pruner: Pruner, rounds: int, sparsity: Sparsity, rewind_epoch: int = 0) -> "LotteryTicket":
        """A ticket whose rounds end at `sparsity` (one, or {layer: sparsity}): rate = 1 - (1 - s)^(1/rounds)."""
        rate = _each(sparsity, lambda s: 1.0 - (1.0 - s) ** (1.0 / rounds))
        return cls(pruner, rounds, rate, rewind_epoch)

    def start(self, model):
        """An attached copy of `model`; its current weights are the rewind point unless rewind_epoch > 0."""
        attached = self.pruner.attach(model)
        self.front = front_end_of(attached)
        if self.rewind_epoch == 0:
            self.rewind_weights = self.front.model_weights(attached)
        return attached

    def train_round(self, model, train: Callable, round_index: int) -> None:
        capture = _CaptureAtEpoch(self.rewind_epoch) if round_index == 0 and self.rewind_epoch else None
        train(model, [capture] if capture else [])
        if capture is not None:
            if capture.weights is None:
                raise FpgapruneError(f"rewind_epoch {self.rewind_epoch} was never reached in the first round")
            self.rewind_weights = capture.weights

    def prune_and_rewind(self, model, round_index: int) -> None:
        """Prune to 1 - (1 - rate)^(round + 1) of the weights, then rewind the survivors (the pruned stay 0)."""
        sparsity = _each(self.rate, lambda rate: 1.0 - (1.0 - rate) ** (round_index + 1))
        self.pruner.apply(model, self.pruner.select(model, sparsity))
        self.front.set_model_weights(model, self.rewind_weights)
        self.front.enforce(model)
        self.sparsities.append(self.pruner.sparsity(model, per_layer=isinstance(sparsity, dict)))

    def run(self, model, train: Callable):
        """All rounds and the final training; returns the pruned, held, trained model."""
        ticket = self.start(model)
        for round_index in range(self.rounds):
            self.train_round(ticket, train, round_index)
            self.prune_and_rewind(ticket, round_index)
        train(ticket, [])
        return ticket


def _each(value: Sparsity, function: Callable[[float], float]) -> Sparsity:
    return {layer: function(v) for layer, v in value.items()} if isinstance(value, dict) else function(value)


def survivors_match(model, reference_weights, pruner: Pruner | None = None) -> bool:
    """Whether every nonzero entry of the model's state (`FrontEnd.model_weights`) equals `reference_weights` (a
    rewind point) bit for bit: the survivors of pruning were rewound, the pruned are 0."""
    now = front_end_of(model).model_weights(model)
    pairs = zip(now.values(), reference_weights.values()) if isinstance(now, dict) else zip(now, reference_weights)
    for current, reference in pairs:
        live = current != 0
        if current.shape != reference.shape or current[live].tobytes() != reference[live].tobytes():
            return False
    return True
