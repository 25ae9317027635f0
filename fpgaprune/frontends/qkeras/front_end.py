"""The tf_keras + QKeras front end as the protocol (`frontends.base.FrontEnd`) that the rest of fpgaprune asks."""

import numpy as np

from fpgaprune.frontends.base import FrontEnd, ModelFiles
from fpgaprune.frontends.qkeras import alpha, quantizers, spec
from fpgaprune.frontends.qkeras.export import exported_model
from fpgaprune.frontends.qkeras.hls_route import KerasTwoRoute
from fpgaprune.frontends.tensorflow.front_end import TensorFlowKeras
from fpgaprune.support.environment import require_legacy_keras

_MODULES = ("tf_keras", "qkeras")


class QKerasFrontEnd(KerasTwoRoute, TensorFlowKeras, ModelFiles, FrontEnd):
    files_module = "fpgaprune.frontends.qkeras.files"
    name = "tf_keras + QKeras"
    asked_order = 10
    quantizer_library = "QKeras"
    library_key = "qkeras"  # `quantization.library`
    quantizes = True  # its twin trains with quantizers (QAT) and hls4ml's Keras-2 converter exports it
    reads = ("keras-2",)  # the model files it reads: Keras 2 (tf_keras)
    framework_modules = _MODULES
    float32_reference = False  # C-sim's reference is the model computed exactly, in float64 (`exact.py`)

    @staticmethod
    def owns(model_or_layer) -> bool:
        cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
        return any(c.__module__.startswith(_MODULES) for c in cls.__mro__)

    @staticmethod
    def bind_layers() -> None:
        import fpgaprune.frontends.qkeras.layers  # noqa: F401  (binds tf_keras' and QKeras' classes to the kinds)

    @staticmethod
    def check_available(what: str) -> None:
        """One line with the fix unless `tf.keras` is tf_keras in this process (QKeras needs it)."""
        require_legacy_keras(what)

    @staticmethod
    def keras():
        from fpgaprune.frontends.qkeras.keras2 import keras

        return keras

    @staticmethod
    def user_module(name: str):
        """A module of this front end that users import through fpgaprune: "tfk" (tf_keras and QKeras' custom
        objects) or "architectures" (the built-in example networks)."""
        from fpgaprune.frontends.qkeras import architectures, holds, keras2

        return {"tfk": keras2, "architectures": architectures, "holds": holds}[name]

    @staticmethod
    def hold_constraint():
        from fpgaprune.frontends.qkeras.holds import HoldConstraint

        return HoldConstraint

    @staticmethod
    def check_model(model) -> None:
        from fpgaprune.frontends.qkeras.keras2 import require_tf_keras_model

        require_tf_keras_model(model)

    @staticmethod
    def exported_model(model, input_shape=None):
        """The model hls4ml's Keras-2 converter takes: this one, its QBatchNormalization parameters quantized."""
        from fpgaprune.frontends.qkeras.keras2 import require_tf_keras_model

        require_tf_keras_model(model)
        return exported_model(model)

    # Quantizers: what a layer holds, what a quantizer computes
    weight_quantizer = staticmethod(quantizers.weight_quantizer)
    quantizer_texts = staticmethod(quantizers.quantizer_texts)
    activation_quantizer = staticmethod(quantizers.activation_quantizer)
    table_function = staticmethod(quantizers.table_function)
    quantizer_curve = staticmethod(quantizers.quantizer_curve)
    quantized = staticmethod(quantizers.quantized)
    folded = staticmethod(quantizers.folded)
    quantizer_bits = staticmethod(quantizers.quantizer_bits)
    quantizer_type = staticmethod(quantizers.quantizer_type)
    zero_of = staticmethod(quantizers.zero_of)
    pruned_values = staticmethod(quantizers.pruned_values)
    # Per-channel scales (alpha='auto'/'auto_po2'), as hls4ml factors them out
    has_channel_scale = staticmethod(alpha.has_channel_scale)
    channel_scales = staticmethod(alpha.channel_scales)
    factor_scales = staticmethod(alpha.factor_scales)
    unit_quantizer = staticmethod(alpha.unit_quantizer)
    # Quantizer texts of a run config
    QuantizationSpec = spec.QuantizationSpec
    check_quantizer_text = staticmethod(spec.check_quantizer_text)
    build_quantizer = staticmethod(spec.build_quantizer)
    with_width = staticmethod(spec.with_width)
    DEFAULT_QUANTIZERS = spec.DEFAULT_QUANTIZERS
    WEIGHT_ROLES = spec.WEIGHT_ROLES

    @staticmethod
    def quantize_array(quantizer, values) -> np.ndarray:
        """`values` (an array) through `quantizer`, in float64."""
        return quantizers.quantize_array(quantizer, values)

    @staticmethod
    def is_quantized(layer) -> bool:
        """Whether the layer is a QKeras layer (its weights or activations are quantized)."""
        return type(layer).__module__.startswith("qkeras")

    @staticmethod
    def is_quantized_activation(layer) -> bool:
        return type(layer).__name__ == quantizers.ACTIVATION

    @staticmethod
    def is_batchnorm(layer) -> bool:
        """A batch normalization, float or quantized."""
        return type(layer).__name__ in ("BatchNormalization", quantizers.BATCHNORM)

    @staticmethod
    def quantized_twin(model, quantization, batchnorm: str = "fold"):
        from fpgaprune.frontends.qkeras.convert import to_qkeras

        require_legacy_keras("quantization")

        return to_qkeras(model, quantization, batchnorm=batchnorm)

    @staticmethod
    def reference_probe(model, batch_size: int = 512):
        """`probe(x)`: every layer's values for inputs `x`, of the model computed exactly (`exact.py`)."""
        from fpgaprune.frontends.qkeras.reference import exact_probe

        return exact_probe(model, batch_size)

    @staticmethod
    def quantizer_sources(model, quantization, default_given: bool = True) -> dict:
        """{layer: where its quantizers come from}: its own (kept), quantization.layers, or the default."""
        from fpgaprune.frontends.qkeras.convert import quantizer_sources

        return quantizer_sources(model, quantization, default_given)

    @staticmethod
    def activation_mismatch(layer, text: str):
        from fpgaprune.frontends.qkeras.convert import recorded_activation_mismatch

        return recorded_activation_mismatch(layer, text)


FRONT_END = QKerasFrontEnd()
