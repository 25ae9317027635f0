"""What both Keras front ends answer the same way, on TensorFlow (`TensorFlowKeras`)."""

import numpy as np

from fpgaprune.errors import ModelFileError
from fpgaprune.frontends.qkeras.reference import LayerValuesProbe
from fpgaprune.frontends.tensorflow.graph import graph_edges, input_name
from fpgaprune.frontends.tensorflow.quiet import quiet_logs, quiet_start
from fpgaprune.frontends.tensorflow.training import fit, predict
from fpgaprune.hls.precision import derive_precisions


class TensorFlowKeras:
    """The contract's answers shared by the tf_keras and Keras 3 front ends: holds as constraints on TensorFlow
    variables, the graph from the model's config, training with `fit` (fpgaprune's hooks as a Keras callback),
    the reference forward and a quiet start. A front end mixing it in gives `keras()` (its Keras module) and
    `hold_constraint()`."""

    def with_holds(self, model, groups: dict, keep_holds: bool):
        """`model` rebuilt with `groups` ({(layer, weight): [HoldEntry]}) held, or baked in and released."""
        from fpgaprune.frontends.tensorflow.holds import with_holds

        return with_holds(self.keras(), self.hold_constraint(), model, groups, keep_holds, self.layer_from_config)

    def build(self, architecture: str, arguments=None, trust_code: bool = False):
        """A built-in example network (`small_cnn`, `original_question_cnn`) in this front end's Keras, with
        `arguments` (input_shape, classes, filters)."""
        from fpgaprune.frontends.qkeras import architectures

        arguments = dict(arguments or {})
        if architecture == "original_question_cnn":
            return architectures.original_question_cnn(keras=self.keras(), **arguments)
        if architecture == "small_cnn":
            return architectures.small_cnn(keras=self.keras(), **arguments)
        raise ModelFileError(f"{architecture}: {self.name} builds small_cnn or original_question_cnn only")

    def strip(self, model, on_unsafe: str = "raise"):
        """`model` rebuilt without its dead channels (`frontends/tensorflow/strip.py`)."""
        from fpgaprune.frontends.tensorflow.strip import strip_model

        return strip_model(model, self, on_unsafe)

    @staticmethod
    def layer_from_config(layer, config: dict):
        """A layer of `layer`'s class built from `config`, whose constraints may be live objects (holds)."""
        return layer.__class__.from_config(config)

    @staticmethod
    def enforce(model) -> None:
        from fpgaprune.frontends.tensorflow.holds import enforce

        enforce(model)

    @staticmethod
    def graph_edges(model) -> tuple:
        """(layers in order, {layer: inbound layer names}, output layer names) from the model's config."""
        return graph_edges(model)

    @staticmethod
    def derive_types(bound, input_type):
        """The hls4ml types derived from the QKeras quantizers and the input type (`hls.precision`)."""
        return derive_precisions(bound.record, input_type)

    @staticmethod
    def input_name(model) -> str:
        return input_name(model)

    @staticmethod
    def hold_of(variable):
        from fpgaprune.frontends.tensorflow.holds import hold_of

        return hold_of(variable)

    @staticmethod
    def array(variable):
        return np.asarray(variable.numpy())

    def fit(self, model, x, y, **settings) -> None:
        """`FrontEnd.fit`: `settings` are its keyword arguments (task, optimizer, ..., hooks)."""
        fit(self.keras(), model, x, y, **settings)

    @staticmethod
    def predict(model, x, batch_size: int = 256):
        return predict(model, x, batch_size)

    def set_seed(self, seed: int) -> None:
        self.keras().utils.set_random_seed(seed)

    def reference_probe(self, model, batch_size: int = 512):
        """`probe(x)`: every layer's values for inputs `x` (`quantize.layer_values.LayerValues`)."""
        return LayerValuesProbe(model, batch_size, self.keras())

    @staticmethod
    def quiet_start() -> None:
        quiet_start()
        quiet_logs()

    @staticmethod
    def hook_callback():
        """The Keras callback that drives fpgaprune's training hooks in `fit` (`fpgaprune.training.hooks`)."""
        from fpgaprune.frontends.tensorflow.callbacks import HookCallback

        return HookCallback
