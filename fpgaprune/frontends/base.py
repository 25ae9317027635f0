"""The front-end contract: everything the rest of fpgaprune asks of a model framework and its quantization
library. A front end is one object (`FRONT_END` in `fpgaprune/frontends/<name>/front_end.py`, or any object
registered with `fpgaprune.framework.register_front_end`) that subclasses `FrontEnd`.

Its module may not import its framework at the top: the registry loads every front end, and `bind_layers`
(which imports the framework) says whether it is installed. The rest of fpgaprune reads a model through these
methods and meets the hls stage through hls4ml's IR (`to_hls4ml`).
"""

import importlib
import importlib.util
import sys
from abc import ABC, abstractmethod


class FrontEnd(ABC):
    """What fpgaprune asks of a model framework and its quantization library."""

    name: str  # "tf_keras + QKeras", "Keras 3", "PyTorch": named in messages
    quantizer_library: str = "the quantized model"  # what C-sim is compared with ("QKeras", "Brevitas")
    strips: bool = True  # `fpgaprune.strip` rebuilds its models without their dead channels
    keras_major: int | None = None  # Keras model files: the major version that wrote them
    indexes_own_layout: bool = False  # whether a selection's index addresses a layout other than fpgaprune's

    # The framework's top-level packages: whether it is installed, and whether this process has imported it
    framework_modules: tuple = ()
    makes_callbacks: bool = False  # `hook_callback` gives the class that makes a TrainingHook a Keras callback

    # -- The framework: is it here, and which of its objects are its own
    @abstractmethod
    def owns(self, model_or_layer) -> bool:
        """Whether the framework built this model, layer, class or quantizer; decided without importing the
        framework (the registry asks every front end)."""

    @abstractmethod
    def bind_layers(self) -> None:
        """Bind its layer classes to fpgaprune's layer kinds (`layer_kinds.bind`), importing its framework; the
        registry calls it once, when it first hands the front end out."""

    def installed(self) -> bool:
        """Whether its framework is installed, from the package index alone (`framework_modules`); a front end
        that names none is bound to find out (ImportError: not installed)."""
        if self.framework_modules:
            return all(importlib.util.find_spec(module) is not None for module in self.framework_modules)
        try:
            self.bind_layers()
        except ImportError:
            return False
        return True

    def loaded(self) -> bool:
        """Whether this process has imported its framework."""
        return any(module in sys.modules for module in self.framework_modules[:1])

    def check_available(self, what: str) -> None:
        """Raise one line with the fix when `what` (quantization, export) cannot run in this process."""

    def quiet_start(self) -> None:
        """The framework's first, noisy calls, made while the CLI's stderr is silenced (`fpgaprune/quiet.py`)."""

    def quiet_logs(self) -> None:
        """Silence the framework's loggers (the CLI, unless --verbose)."""

    @abstractmethod
    def check_model(self, model) -> None:
        """Raise one ModelTypeError line unless fpgaprune can read the model (its graph rebuildable)."""

    def layers(self, model) -> list:
        """The model's layers in order, each with a `name` and its weights as the attributes its kind names (a
        framework whose layers lack these presents views of them)."""
        return list(model.layers)

    def get_layer(self, model, name: str):
        return next(layer for layer in self.layers(model) if layer.name == name)

    def index_shape(self, layer, weight) -> tuple:
        """The shape a selection's index addresses: the weight in the framework's own layout."""
        return tuple(weight.variable(layer).shape)

    def weight_named(self, layer, name: str) -> str:
        """fpgaprune's name of the layer's weight the framework calls `name` (a selection may use either)."""
        return name

    def index_layout(self, layer) -> tuple | None:
        """How the user's layout of the layer's kernel maps to fpgaprune's, axis by axis; None: the same."""
        return None

    def to_fpgaprune_layout(self, layer, weight, mask):
        """A boolean mask in the framework's layout (`index_shape`) in fpgaprune's (a kernel's outputs last)."""
        return mask

    @abstractmethod
    def graph_edges(self, model) -> tuple:
        """The model as a graph of layers: (its layers in order, each with a `name` and its weights as the
        attributes its kind names; {layer name: the names of the layers it reads}; the output layers' names)."""

    # -- Weights, and the hold mechanism that keeps chosen entries at their targets through training
    @abstractmethod
    def array(self, variable):
        """A weight as a numpy array, in fpgaprune's layout (a kernel's input axes first, its outputs last)."""

    @abstractmethod
    def hold_of(self, variable):
        """The hold (`masking.held.HeldEntries`) a weight carries, or None."""

    @abstractmethod
    def with_holds(self, model, groups: dict, keep_holds: bool):
        """A copy of `model` whose weights in `groups` ({(layer, weight): [HoldEntry]}) are held (keep_holds), or
        have the held values baked in and no hold (finalize)."""

    @abstractmethod
    def enforce(self, model) -> None:
        """Re-assign every held entry now (after weights were set from outside the training loop)."""

    # -- Training: the pipeline's fine-tune, QAT, schedules, lottery, budget and progress run through these
    @abstractmethod
    def fit(
        self, model, x, y, *, task, optimizer: str, learning_rate: float, epochs: int, batch_size: int, hooks=()
    ) -> None:
        """Train `model` on (x, y) with the task's loss, driving `hooks` (`fpgaprune.hooks.TrainingHook`)."""

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

    # -- Files: safe load, atomic save
    @abstractmethod
    def load(self, path, trust_code: bool = False, compile: bool = True):
        """A model file, checked against an allow-list before anything is deserialized."""

    @abstractmethod
    def save(self, model, path):
        """A model file, written atomically."""

    @abstractmethod
    def file_policy(self):
        """The allow-list (`model_files.FilePolicy`) its model files are checked against."""

    # -- Quantization and QAT: what a layer's quantizers are and compute
    @abstractmethod
    def quantized_twin(self, model, quantization, batchnorm: str = "fold"):
        """The quantized model (same layer names, holds carried over), ready for QAT and hls4ml."""

    @abstractmethod
    def quantizer_sources(self, model, quantization, default_given: bool = True) -> dict:
        """{layer: where its quantizers come from}: its own, or the config's."""

    @abstractmethod
    def weight_quantizer(self, layer, role: str):
        """The quantizer of one of a layer's weights by role (kernel, bias, recurrent, depthwise, pointwise), or
        None (a float weight)."""

    @abstractmethod
    def activation_quantizer(self, layer):
        """The quantizer a quantized activation layer applies, or None."""

    def folded(self, layer, role: str, values):
        """A weight as the layer computes with it before its quantizer: `values` themselves, or a fused layer's
        (QKeras' QConv2DBatchnorm) with its batch normalization folded in."""
        return values

    def quantized(self, layer, role: str, values):
        """`values` through the layer's quantizer for `role` (unchanged without one), as float64; a fused
        layer's folded first (`folded`)."""
        import numpy as np

        return np.asarray(values, np.float64)

    def is_quantized(self, layer) -> bool:
        """Whether the layer's weights or activations are quantized."""
        return False

    def quantizer_texts(self, layer) -> dict:
        """{weight role: its quantizer as the model's config writes it}, for the manifest."""
        return {}

    def is_quantized_activation(self, layer) -> bool:
        """Whether the layer is an activation quantizer of its own (QKeras' QActivation)."""
        return False

    def is_batchnorm(self, layer) -> bool:
        return False

    def table_function(self, layer) -> str | None:
        """The function hls4ml reads from a table for a quantized activation layer ("sigmoid", "tanh": QKeras'
        quantized_tanh with use_real_tanh, say), whose C-sim is then judged within the table's bound; None."""
        return None

    def quantizer_type(self, quantizer, activation: bool = False):
        """The fixed-point type (`quantize.fixed_types.FixedType`) of a quantizer's outputs, or None."""
        return None

    def quantizer_range(self, quantizer) -> tuple[float, float] | None:
        """[lo, hi] of what a quantizer outputs, where its type does not say (None: measured on a ramp)."""
        return None

    def calibrate(self, model, x) -> None:
        """Set the ranges the model's quantizers learn from data (inputs `x`), after QAT and before pricing or
        export; nothing for quantizers that keep their ranges (HGQ2's activation quantizers wrap: `trace_minmax`)."""

    def kernel_input_types(self, layer):
        """(k, i, f) arrays, one entry per row of the layer's kernel matrix, where its inputs are typed value by
        value (the types hls4ml's DA pass gives da4ml); None where the layer's node has one input type."""
        return None

    def quantizer_bits(self, layer, role: str, default: int = 32) -> int:
        """The bit width of a layer's quantizer for `role` (`default` for a float weight)."""
        return default

    def has_channel_scale(self, quantizer) -> bool:
        """Whether the quantizer scales each output channel (hls4ml factors it into a `<layer>_alpha` node)."""
        return False

    def zero_of(self, quantizer) -> float:
        """What the quantizer makes of a weight that is 0 (a pruned weight needs 0.0)."""
        return 0.0

    def pruned_values(self, quantizer, values, pruned):
        """What the quantizer makes of the `pruned` entries (set to 0) of a weight whose other entries are
        `values`."""
        import numpy as np

        return np.zeros(int(np.count_nonzero(pruned)))

    def derive_types(self, model, input_type):
        """The hls4ml types of each node (`hls.precision.PrecisionPlan`) that make C-sim equal the quantized model;
        an empty plan leaves every node at the config's precisions."""
        from fpgaprune.hls.precision.plan import PrecisionPlan

        return PrecisionPlan(self.input_name(model))

    # -- The reference forward, for C-sim's layer diff and the numerical profile
    @abstractmethod
    def reference_probe(self, model, batch_size: int = 512):
        """`probe(x)`: every layer's values for inputs `x` (`quantize.layer_values.LayerValues`)."""

    # -- Export: the model as hls4ml's IR
    @abstractmethod
    def input_name(self, model) -> str:
        """The name of the model's input node in hls4ml's IR."""

    @abstractmethod
    def exported_model(self, model, input_shape: tuple | None = None):
        """The model as its converter takes it (a Keras 3 model: its tf_keras twin); `input_shape`: one sample's,
        for a framework whose models do not record it."""

    def output_shape(self, model) -> tuple:
        """The model's output shape, batch first, for a framework whose models do not carry it."""
        raise AttributeError(f"{type(model).__name__} has no output_shape")

    def hardware_layout(self, model, x):
        """Inputs `x` (in the model's layout) as the exported design takes them: hls4ml is channels-last."""
        return x

    @abstractmethod
    def hls_config(self, model, granularity: str = "name", **kwargs) -> dict:
        """hls4ml's HLSConfig of the model, from its converter."""

    @abstractmethod
    def to_hls4ml(self, model, hls_config: dict, output_dir, **kwargs):
        """hls4ml's ModelGraph of the model (unbuilt): where the front end hands over to the hls stage."""

    @abstractmethod
    def conversion_problem(self, model) -> str | None:
        """Why hls4ml cannot convert the model (one line naming the layer), or None."""

    @abstractmethod
    def renamed(self, model, names: dict):
        """A copy of the model whose layers named in `names` ({original: new}) carry their new names."""


class ModelFiles:
    """A front end's model files, from its `files` module (`files_module`), imported on first use: the
    allow-list policy, the objects a file may name, load and atomic save."""

    files_module: str

    def _files(self):
        return importlib.import_module(self.files_module)

    def custom_objects(self) -> dict:
        return self._files().model_objects()

    def load(self, path, trust_code: bool = False, compile: bool = True):
        return self._files().load_model(path, compile=compile, trust_code=trust_code)

    def save(self, model, path):
        return self._files().save_model(model, path)

    def from_json(self, path, text: str, weights, trust_code: bool = False):
        """The model of a JSON architecture (already checked against `file_policy`) with its HDF5 weights."""
        return self._files().model_from_json(path, text, weights, trust_code=trust_code)

    def file_policy(self):
        return self._files().POLICY
