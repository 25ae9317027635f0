"""QAT of an HGQ2 model: Keras' `fit` with the run's optimizer and loss (HGQ2's layers add ebops x β to it), the
bit-width variables kept out of weight decay (AdamW would otherwise shrink every width, held or not)."""

import keras

from fpgaprune.frontends.tensorflow.training import OPTIMIZERS, keras_loss


def fit(model, x, y, *, task, optimizer: str, learning_rate: float, epochs: int, batch_size: int, hooks=()) -> None:
    """Keras' `fit` with a fresh optimizer; β moved from `beta0` to `beta_final` where the twin's settings ask."""
    chosen = getattr(keras.optimizers, OPTIMIZERS[optimizer])(learning_rate)
    if hasattr(chosen, "exclude_from_weight_decay"):
        chosen.exclude_from_weight_decay(var_names=["fixed_point_quantizer"])
    model.compile(chosen, keras_loss(task, keras))
    callbacks = list(hooks)
    schedule = getattr(model, "beta_schedule", None)  # (beta0, beta_final), set by `twin.hgq2_twin`
    if schedule is not None and epochs > 1:
        from hgq.utils.sugar import BetaScheduler

        start, end = schedule
        callbacks.append(BetaScheduler(lambda epoch: float(start * (end / start) ** (epoch / (epochs - 1)))))
    if epochs:
        model.fit(x, task.labels_for_training(y), batch_size=batch_size, epochs=epochs, verbose=0, callbacks=callbacks)
