"""Guards against inputs that would otherwise crash deep inside TensorFlow or hang: non-finite values, data
that does not fit the model, and a loss that turns NaN in training."""

import numpy as np

from fpgaprune.errors import DataError, NonFiniteError, first_line
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


def check_data_fits_model(dataset, bound, source: str) -> None:
    """One-line DataError unless the inputs match the input shape of the bound model (`record.resolved`; the
    labels: `fpgaprune.model.task`); a model that records none (a PyTorch module) is run on one sample of each."""
    record = bound.record
    sources = [layer.input_shape for layer in record.layers.values() if not layer.inbound]
    if not any(sources):
        _runs_on(dataset, bound, source)
        return
    shape = sources[0] if len(sources) == 1 else None  # several inputs: not checked here
    if shape and isinstance(shape[0], tuple):  # an input layer's: one shape in a list
        shape = shape[0] if len(shape) == 1 else None
    expected = tuple(shape[1:]) if shape else None
    for name in ("x_train", "x_test"):
        found = tuple(getattr(dataset, name).shape[1:])
        if expected is not None and not _fits(found, expected):
            raise DataError(
                f"{source}: {name} has samples of shape {found}; the model's input {record.input_name!r} "
                f"expects {_shape_text(expected)}"
            )


def _runs_on(dataset, bound, source: str) -> None:
    for name in ("x_train", "x_test"):
        sample = getattr(dataset, name)[:1]
        try:
            bound.front.predict(bound.model, sample)
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
