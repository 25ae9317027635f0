"""The Keras 3 front end as the protocol (`frontends.base.FrontEnd`): its models are held and pruned as they
are; quantization and export go through their tf_keras twin, which the quantizing front end takes."""

import numpy as np

from fpgaprune.errors import FpgapruneError, ModelTypeError
from fpgaprune.framework import library_front_end
from fpgaprune.frontends.base import FrontEnd, ModelFiles
from fpgaprune.frontends.keras3.twin import tf_keras_twin
from fpgaprune.frontends.qkeras.front_end import FRONT_END as QKERAS_FRONT_END
from fpgaprune.frontends.qkeras.hls_route import KerasTwoRoute
from fpgaprune.frontends.tensorflow.front_end import TensorFlowKeras
from fpgaprune.masking import finalize, hold


class Keras3FrontEnd(KerasTwoRoute, TensorFlowKeras, ModelFiles, FrontEnd):
    files_module = "fpgaprune.frontends.keras3.files"
    name = "Keras 3"
    asked_order = 30
    quantizer_library = "QKeras"
    quantizes = False  # QAT and export run on the tf_keras twin (`quantized_twin`, `exported_model`)
    reads = ("keras-3",)  # the model files it reads
    framework_modules = ("keras",)

    @staticmethod
    def owns(model_or_layer) -> bool:
        cls = model_or_layer if isinstance(model_or_layer, type) else type(model_or_layer)
        return any(c.__module__ == "keras" or c.__module__.startswith("keras.src.") for c in cls.__mro__)

    @staticmethod
    def keras():
        import keras

        return keras

    @staticmethod
    def hold_constraint():
        from fpgaprune.frontends.keras3.holds import HoldConstraint

        return HoldConstraint

    @staticmethod
    def check_model(model) -> None:
        """A Keras 3 Sequential or functional model, on the TensorFlow backend (holds are TensorFlow variables)."""
        import keras

        if not isinstance(model, keras.Model):
            raise ModelTypeError(f"expected a Keras model, got {type(model).__module__}.{type(model).__name__}")
        if keras.backend.backend() != "tensorflow":
            raise ModelTypeError(
                f"model '{model.name}' runs on Keras 3's {keras.backend.backend()} backend; "
                "fpgaprune's holds need the tensorflow backend (KERAS_BACKEND=tensorflow)"
            )
        if not (isinstance(model, keras.Sequential) or type(model).__name__ == "Functional"):
            raise ModelTypeError(
                f"model '{model.name}' is a subclassed keras.Model; fpgaprune needs a Sequential "
                "or functional model (its layers must be rebuildable from their configs)"
            )
        for layer in model.layers:
            if getattr(layer, "lora_enabled", False):
                raise ModelTypeError(
                    f"layer '{layer.name}' ({type(layer).__name__}) has LoRA enabled (lora_rank="
                    f"{layer.lora_rank}): its kernel is computed, not a variable fpgaprune can hold "
                    "or hls4ml can export; add the LoRA update into the kernel first"
                )

    # A Keras 3 layer holds no quantizer: quantization is the twin's
    @staticmethod
    def weight_quantizer(layer, role):
        return None

    @staticmethod
    def activation_quantizer(layer):
        return None

    @staticmethod
    def quantized(layer, role, values):
        return np.asarray(values, np.float64)

    @staticmethod
    def is_quantized(layer) -> bool:
        return False

    @staticmethod
    def quantized_twin(model, quantization, batchnorm: str = "fold"):
        """With QKeras (`quantization.library` qkeras, or auto where QKeras is installed): the QKeras model of
        `model`'s tf_keras twin; with HGQ2: `model`'s HGQ2 twin, in Keras 3. Holds carried over."""
        library = library_front_end((quantization or {}).get("library", "auto"))
        if library is not _qkeras():
            return library.quantized_twin(model, quantization, batchnorm=batchnorm)
        return _qkeras().quantized_twin(held_twin(model), quantization, batchnorm=batchnorm)

    @staticmethod
    def quantizer_sources(model, quantization, default_given: bool = True) -> dict:
        """Every quantizer of its twin comes from the config (a Keras 3 layer holds none)."""
        return _qkeras().quantizer_sources(model, quantization, default_given)

    @staticmethod
    def conversion_problem(model) -> str | None:
        """Why hls4ml cannot convert the model as this environment's quantizer library exports it (its tf_keras
        twin for QKeras, its HGQ2 twin for HGQ2), or None."""
        library = library_front_end()
        if library is _qkeras():
            return KerasTwoRoute.conversion_problem(model)
        try:
            twin = library.quantized_twin(model, {})
        except FpgapruneError as error:
            return str(error)
        return library.conversion_problem(twin)

    @staticmethod
    def bind_layers() -> None:
        import fpgaprune.frontends.keras3.layers  # noqa: F401  (binds Keras 3's classes to the layer kinds)

    @staticmethod
    def check_available(what: str) -> None:
        """Keras 3 models are quantized and exported as their tf_keras twins, which QKeras needs."""
        _qkeras().check_available(what)

    @staticmethod
    def exported_model(model, input_shape=None):
        """hls4ml's Keras-2 converter takes the tf_keras twin (with precisions derived only for a QKeras model)."""
        return held_twin(model)


def _qkeras():
    """The tf_keras + QKeras front end, which quantizes and exports a Keras 3 model's twin."""
    return QKERAS_FRONT_END


def held_twin(model):
    """The tf_keras twin of a Keras 3 model, holding what `model` holds."""
    _qkeras().check_available("quantization and export")  # one line with the fix where tf_keras cannot run
    Keras3FrontEnd.check_model(model)
    plain, manifest = finalize(model)
    twin = tf_keras_twin(plain)
    return hold(twin, manifest) if len(manifest) else twin


FRONT_END = Keras3FrontEnd()
