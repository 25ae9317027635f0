"""Training hooks: what fpgaprune runs inside a training loop (a pruning schedule, a budget's gradual fit, the
lottery ticket's rewind point, the progress bar, the non-finite-loss guard), whatever the framework.

A hook answers `begin`, `epoch_begin`, `step_begin`, `step_end`, `epoch_end` and `end`, each given the `run`:
the model, the optimizer's update count (`run.step`) and its weights. The model's front end drives it: for
Keras, every hook is also a Keras callback (the adapter class of a Keras front end whose framework the process
has imported is mixed in when the hook is made, `FrontEnd.hook_callback`), so `model.fit(callbacks=[hook])`
works as it always has; a framework without `fit` calls the hooks from its own loop (`FrontEnd.fit`).
"""

from functools import lru_cache

from fpgaprune.framework import hook_callback


class TrainingRun:
    """What a hook may read of the training it runs in: `model`, `step` (optimizer updates so far), and the
    model's weights as arrays. Each front end gives its own."""

    model = None

    @property
    def step(self) -> int:
        """Optimizer updates so far. Abstract: each front end's run answers (`frontends/*/training.py`)."""
        raise NotImplementedError

    def weights(self):
        """The model's state as arrays (`FrontEnd.model_weights`: a list for Keras, a dict for PyTorch), a
        rewind point. Abstract: each front end's run answers."""
        raise NotImplementedError


class TrainingHook:
    """Override the events you need; `step_end` may return True to stop the training."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(_with_callback(cls))

    def __init__(self):
        super().__init__()

    def begin(self, run: TrainingRun) -> None:
        pass

    def epoch_begin(self, run: TrainingRun, epoch: int) -> None:
        pass

    def step_begin(self, run: TrainingRun, batch: int) -> None:
        pass

    def step_end(self, run: TrainingRun, batch: int, loss: float | None) -> bool | None:
        pass

    def epoch_end(self, run: TrainingRun, epoch: int, loss: float | None) -> None:
        pass

    def end(self, run: TrainingRun) -> None:
        pass


def _with_callback(cls):
    """`cls` with the loaded Keras front end's callback adapter mixed in (cls itself without one)."""
    return _mixed(cls, hook_callback())


@lru_cache(maxsize=None)
def _mixed(cls, adapter):
    if adapter is None or issubclass(cls, adapter):
        return cls
    return type(cls.__name__, (cls, adapter), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
