"""A training hook (`fpgaprune.training.hooks.TrainingHook`) as a Keras callback: `fit` calls its events.

One class serves tf_keras and Keras 3 alike (Keras 3's `fit` takes a tf_keras callback: it calls the same
methods and `set_model`)."""

import tf_keras

from fpgaprune.training.hooks import TrainingRun


class KerasRun(TrainingRun):
    """A Keras `fit`: its model, the optimizer's update count and the weights."""

    def __init__(self, model):
        self.model = model

    @property
    def step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def weights(self) -> list:
        return [w.copy() for w in self.model.get_weights()]


class HookCallback(tf_keras.callbacks.Callback):
    """Mixed into every TrainingHook (`hooks._with_callback`): Keras' callback events call the hook's."""

    def __init__(self):
        tf_keras.callbacks.Callback.__init__(self)  # the hook's `super().__init__()` lands here

    def _run(self) -> KerasRun:
        return KerasRun(self.model)

    def on_train_begin(self, logs=None):
        self.begin(self._run())

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_begin(self._run(), epoch)

    def on_train_batch_begin(self, batch, logs=None):
        self.step_begin(self._run(), batch)

    def on_train_batch_end(self, batch, logs=None):
        if self.step_end(self._run(), batch, _loss(logs)):
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_end(self._run(), epoch, _loss(logs))

    def on_train_end(self, logs=None):
        self.end(self._run())


def _loss(logs) -> float | None:
    loss = (logs or {}).get("loss")
    return None if loss is None else float(loss)
