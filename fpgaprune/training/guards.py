"""Guards against inputs that would otherwise crash deep inside TensorFlow or hang: non-finite values, data
that does not fit the model, and a loss that turns NaN in training."""

import numpy as np

from fpgaprune.errors import DataError, NonFiniteError, first_line
from fpgaprune.framework import front_end_of
from fpgaprune.training.hooks import TrainingHook


def check_finite_weights(bound, when: str) -> None:
    """Raise a one-line NonFiniteError naming the first layer and weight of a bound model (`record.resolved`)
    holding a NaN or Inf."""
    for (layer, weight), values in bound.front.named_arrays(bound.model).items():
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            bad = int(values.size - np.isfinite(values).sum())
            raise NonFiniteError(
                f"{when}: layer {layer!r} weight {weight!r} holds {bad} non-finite value(s) (NaN/Inf); every "
                "weight must be finite"
            )


def check_finite_array(values: np.ndarray, where: str) -> None:
    if values.dtype.kind in "fc" and not np.isfinite(values).all():
        bad = int(values.size - np.isfinite(values).sum())
        raise NonFiniteError(f"{where}: {bad} non-finite value(s) (NaN/Inf); every value must be finite")


def check_data_fits_model(dataset, model, source: str) -> None:
    """One-line DataError unless the inputs match the model's input shape (the labels: `fpgaprune.model.task`); a model
    that records none (a PyTorch module) is run on one sample of each."""
    if not hasattr(model, "input_shape"):
        _runs_on(dataset, model, source, front_end_of(model))
        return
    expected = tuple(model.input_shape[1:]) if not isinstance(model.input_shape, list) else None
    for name in ("x_train", "x_test"):
        shape = tuple(getattr(dataset, name).shape[1:])
        if expected is not None and not _fits(shape, expected):
            raise DataError(
                f"{source}: {name} has samples of shape {shape}; the model's input "
                f"{model.inputs[0].name.split(':')[0]!r} expects {_shape_text(expected)}"
            )


def _runs_on(dataset, model, source: str, front) -> None:
    for name in ("x_train", "x_test"):
        sample = getattr(dataset, name)[:1]
        try:
            front.predict(model, sample)
        except Exception as error:  # noqa: BLE001 - the model's own forward may raise anything on a wrong shape
            raise DataError(
                f"{source}: {name} has samples of shape {tuple(sample.shape[1:])}, and the model's forward fails "
                f"on them ({type(error).__name__}: {first_line(error)})"
            ) from None


def _fits(shape: tuple, expected: tuple) -> bool:
    return len(shape) == len(expected) and all(e is None or e == s for s, e in zip(shape, expected))


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"


class StopOnNonFiniteLoss(TrainingHook):
    """Stop training at the first NaN/Inf loss with a one-line NonFiniteError naming the stage and the epoch."""

    def __init__(self, stage: str):
        super().__init__()
        self.stage = stage
        self.epoch = 0

    def epoch_begin(self, run, epoch):
        self.epoch = epoch

    def step_end(self, run, batch, loss):
        if loss is not None and not np.isfinite(float(loss)):
            raise NonFiniteError(
                f"{self.stage}: the training loss became {float(loss)} in epoch {self.epoch + 1} "
                f"(batch {batch + 1}); check the data and the weights for NaN/Inf, or lower the "
                "learning rate"
            )
