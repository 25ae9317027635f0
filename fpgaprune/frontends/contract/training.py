"""Training: the pipeline's fine-tune, QAT, schedules, lottery, budget and progress run through these."""

from abc import ABC, abstractmethod


class Training(ABC):
    """Training."""

    @abstractmethod
    def fit(
        self, model, x, y, *, task, optimizer: str, learning_rate: float, epochs: int, batch_size: int, hooks=()
    ) -> None:
        """Train `model` on (x, y) with the task's loss, driving `hooks` (`fpgaprune.training.hooks.TrainingHook`)."""

    @abstractmethod
    def predict(self, model, x, batch_size: int = 256):
        """The model's outputs for `x`, as a numpy array."""

    def model_weights(self, model):
        """Every array of the model's state (its holds' own arrays left out), copied: a rewind point."""
        return [w.copy() for w in model.get_weights()]

    def set_model_weights(self, model, weights) -> None:
        """Put back what `model_weights` gave (the holds then apply to it)."""
        model.set_weights(weights)

    @abstractmethod
    def set_seed(self, seed: int) -> None:
        """Seed the framework's random generators."""

    def hook_callback(self):
        """The class that makes a TrainingHook its framework's callback (Keras' `fit`), or None."""
        return None
