"""GradualPruning: the training hook that grows the masks on a schedule during training (a Keras callback in
`fit`: `fpgaprune.training.hooks`)."""

from fpgaprune.errors import FpgapruneError
from fpgaprune.pruning.pruner import Pruner
from fpgaprune.pruning.schedules import PruningSchedule
from fpgaprune.training.hooks import TrainingHook


class GradualPruning(TrainingHook):
    """Before each optimizer step that the schedule names, prune the model to the scheduled sparsity.

    The model must come from `pruner.attach(...)`. `history` records (step, scheduled, achieved) sparsity,
    each a number or, for a per-layer schedule, {layer: sparsity}.
    """

    def __init__(self, pruner: Pruner, schedule: PruningSchedule):
        super().__init__()
        self.pruner, self.schedule = pruner, schedule
        self.history: list[tuple] = []

    def begin(self, run):
        for target in self.pruner.targets(run.model):
            if target.record.held is None:
                raise FpgapruneError(
                    f"GradualPruning: layer '{target.layer}' has no hold; build the model with pruner.attach(model)"
                )

    def step_begin(self, run, batch):
        self.prune_at(run.model, run.step)

    def prune_at(self, model, step: int) -> None:
        """Prune `model` as the schedule says for optimizer step `step`: what `fit` calls before each step, and
        what your own loop calls (PyTorch: before `optimizer.step()`)."""
        update, sparsity = self.schedule(step)
        if update:
            self.pruner.apply(model, self.pruner.select(model, sparsity))
            achieved = self.pruner.sparsity(model, per_layer=isinstance(sparsity, dict))
            self.history.append((step, sparsity, achieved))
