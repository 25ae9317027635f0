"""A model bound to the front end that reads it (`record.resolved`), with its record described at most once per
state of its weights.

The record is kept beside the model (weakly: it goes with the model) with a fingerprint of every array of the
model's state (`FrontEnd.state_token`). Asked again, the binding compares fingerprints: training, a hold's
enforcement or weights set by hand between two calls make a new one, and the model is described again.
"""

import weakref

import numpy as np

from fpgaprune.framework import front_end_of
from fpgaprune.record.model_record import ModelRecord

_RECORDS = weakref.WeakKeyDictionary()  # {model: (its state token, its record)}, for as long as the model lives


class Bound:
    """A model and its front end. Everything under an entry point reads the model through this: its record, and
    the front end's answers."""

    __slots__ = ("model", "front")

    def __init__(self, model, front):
        self.model, self.front = model, front

    @property
    def record(self) -> ModelRecord:
        """The model's record, described again only where its weights changed since the last description."""
        token = self.front.state_token(self.model)
        kept = _kept(self.model)
        if kept is not None and kept[0] == token:
            return kept[1]
        record = self.front.describe(self.model)
        _keep(self.model, token, record)
        return record

    def keeping(self, record: ModelRecord) -> "Bound":
        """This binding, with `record` kept as its model's (a renamed copy's record, made from the original's)."""
        _keep(self.model, self.front.state_token(self.model), record)
        return self

    def output_shape(self, x=None) -> tuple:
        """The model's output shape, batch first: its output layer's, from its record (a PyTorch module that has not
        run records none: one forward of `x[:1]`)."""
        record = self.record
        shape = record.layers[record.outputs[-1]].output_shape if record.outputs else ()
        if shape:
            return tuple(shape)
        if x is None:
            raise AttributeError(f"{type(self.model).__name__} has no output_shape (it has not run on data)")
        return tuple(np.shape(self.front.predict(self.model, np.asarray(x[:1]))))

    def forget(self) -> "Bound":
        """This binding, its model's record dropped: the next read describes it (its holds changed in place)."""
        _RECORDS.pop(self.model, None)
        return self

    def made(self, model) -> "Bound":
        """`model`, which this front end made from this binding's model (a held copy, a renamed one), bound to it."""
        return Bound(model, self.front)

    def exported(self, input_shape: tuple | None = None) -> "Bound":
        """The model as its converter takes it (`FrontEnd.exported_model`), bound: a Keras 3 model's tf_keras
        twin to the tf_keras front end, any other model as it is."""
        model = self.front.exported_model(self.model, input_shape=input_shape)
        return self if model is self.model else _bound_to_its_own(model)

    def twin(self, spec=None, batchnorm: str = "fold") -> "Bound":
        """The model's quantized twin (`FrontEnd.quantized_twin`), bound to its own front end (a Keras 3 model's
        HGQ2 twin to HGQ2's)."""
        return _bound_to_its_own(self.front.quantized_twin(self.model, spec, batchnorm=batchnorm))

    def renamed(self, names: dict) -> "Bound":
        """A copy whose layers named in `names` ({original: new}) carry their new names, with this record renamed
        (nothing is described again)."""
        if not names:
            return self
        return self.made(self.front.renamed(self.model, names)).keeping(self.record.renamed(names))

    def __repr__(self) -> str:
        return f"Bound({type(self.model).__name__}, {self.front.name})"


def _bound_to_its_own(model) -> Bound:
    """A model a front end made in another framework's classes, bound to that framework's front end."""
    return Bound(model, front_end_of(model))


def _kept(model):
    try:
        return _RECORDS.get(model)
    except TypeError:  # a model that cannot be weakly referenced or hashed: described each time
        return None


def _keep(model, token, record) -> None:
    try:
        _RECORDS[model] = (token, record)
    except TypeError:
        pass
