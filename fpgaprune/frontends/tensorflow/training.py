"""Training and inference of a Keras model (tf_keras or Keras 3) for the pipeline: the run's optimizer, the
task's loss (`keras_loss`) and fpgaprune's hooks as callbacks."""

import numpy as np

OPTIMIZERS = {"adam": "Adam", "sgd": "SGD", "rmsprop": "RMSprop", "adamw": "AdamW"}


def fit(
    keras, model, x, y, *, task, optimizer: str, learning_rate: float, epochs: int, batch_size: int, hooks=()
) -> None:
    """Compile `model` with a fresh optimizer and the task's loss, then train it `epochs` epochs."""
    model.compile(getattr(keras.optimizers, OPTIMIZERS[optimizer])(learning_rate), keras_loss(task, keras))
    if epochs:
        model.fit(
            x, task.labels_for_training(y), batch_size=batch_size, epochs=epochs, verbose=0, callbacks=list(hooks)
        )


def predict(model, x, batch_size: int = 256) -> np.ndarray:
    return np.asarray(model.predict(x, batch_size=batch_size, verbose=0))


def keras_loss(task, keras):
    """The Keras loss object of a task (`fpgaprune.model.task.Task`), from `keras` (tf_keras, or Keras 3)."""
    if task.loss == "sparse_categorical_crossentropy" or task.loss == "categorical_crossentropy":
        return keras.losses.SparseCategoricalCrossentropy(from_logits=task.from_logits)  # labels are indices
    if task.loss == "binary_crossentropy":
        return keras.losses.BinaryCrossentropy(from_logits=task.from_logits)
    return {
        "mse": keras.losses.MeanSquaredError,
        "mae": keras.losses.MeanAbsoluteError,
        "huber": keras.losses.Huber,
    }[task.loss]()
