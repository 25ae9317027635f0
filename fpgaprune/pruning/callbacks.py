"""GradualPruning: the Keras callback that grows the masks on a schedule during `fit`."""

from fpgaprune.errors import FpgapruneError
from fpgaprune.masking import is_hold
from fpgaprune.pruning.pruner import Pruner
from fpgaprune.pruning.schedules import PruningSchedule
from fpgaprune.tfk import keras


class GradualPruning(keras.callbacks.Callback):
    """Before each optimizer step that the schedule names, prune the model to the scheduled sparsity.

    The model must come from `pruner.attach(...)`. `history` records (step, scheduled, achieved) sparsity,
    each a number or, for a per-layer schedule, {layer: sparsity}.
    """

    def __init__(self, pruner: Pruner, schedule: PruningSchedule):
        super().__init__()
        self.pruner, self.schedule = pruner, schedule
        self.history: list[tuple] = []

    def on_train_begin(self, logs=None):
        for target in self.pruner.targets(self.model):
            if not is_hold(target.variable.constraint):
                raise FpgapruneError(
                    f"GradualPruning: layer '{target.layer}' has no hold; build the model with pruner.attach(model)"
                )

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        update, sparsity = self.schedule(step)
        if update:
            self.pruner.apply(self.model, self.pruner.select(self.model, sparsity))
            achieved = self.pruner.sparsity(self.model, per_layer=isinstance(sparsity, dict))
            self.history.append((step, sparsity, achieved))
