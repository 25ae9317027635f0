"""The protocol every front end answers (`fpgaprune/frontends/<name>/front_end.py` holds one `FRONT_END`)."""

import importlib
from typing import Protocol


class FrontEnd(Protocol):
    """What fpgaprune asks of a model framework and its quantization library."""

    name: str  # "tf_keras + QKeras", "Keras 3"

    def owns(self, model_or_layer) -> bool:
        """Whether the framework built this model, layer or class."""

    def keras(self):
        """The framework's Keras API module (tf_keras, or keras): clone_model, constraints, callbacks."""

    def weight_quantizer(self, layer, role: str):
        """The quantizer of one of a layer's weights by role (kernel, bias, recurrent, depthwise, pointwise), or
        None (a float layer)."""

    def activation_quantizer(self, layer):
        """The quantizer a quantized activation layer applies, or None."""

    def quantizer_type(self, quantizer, activation: bool = False):
        """The fixed-point type (`quantize.fixed_types.FixedType`) of a quantizer's outputs, or None."""

    def keeps_zero(self, quantizer) -> float:
        """What the quantizer makes of 0 (pruned weights need 0.0)."""

    def quantized_twin(self, model, spec, batchnorm: str = "fold"):
        """The quantized twin of `model` (same layer names, holds carried over), ready for QAT and hls4ml."""

    def load(self, path, trust_code: bool = False):
        """A model file, checked against an allow-list before anything is deserialized."""

    def save(self, model, path):
        """A model file, written atomically."""


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
