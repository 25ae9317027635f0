"""Quantization and QAT: the quantized twin, the quantizer texts a run names, the library's own costs, and the
three questions of a quantizer the stages ask (its type, what it makes of 0, whether a layer is quantized)."""

from abc import ABC, abstractmethod

from fpgaprune.errors import QuantizationConfigError


class Quantization(ABC):
    """Quantization and QAT."""

    quantizer_library: str = "the quantized model"  # what C-sim is compared with ("QKeras", "Brevitas")
    library_key: str | None = None  # the `quantization.library` it is ("qkeras", "hgq2"), if it is one
    WEIGHT_ROLES: tuple = ("kernel",)  # the weight roles whose pruned entries a quantizer must keep at 0
    DEFAULT_QUANTIZERS: dict = {}  # the quantizer texts a run uses unless its config names others

    @abstractmethod
    def quantized_twin(self, model, quantization, batchnorm: str = "fold"):
        """The quantized model (same layer names, holds carried over), ready for QAT and hls4ml."""

    @abstractmethod
    def quantizer_sources(self, model, quantization, default_given: bool = True) -> dict:
        """{layer: where its quantizers come from}: its own, or the config's."""

    def dense_reference(self, quantized, trained, spec, batchnorm: str = "fold"):
        """The quantized model with every pruned entry given back its trained value: what "what pruning saved"
        is measured against (`frontends/dense_reference.py`)."""
        from fpgaprune.frontends.dense_reference import dense_reference

        return dense_reference(self, quantized, trained, spec, batchnorm)

    def calibrate(self, model, x) -> None:
        """Set the ranges the model's quantizers learn from data (inputs `x`), after QAT and before pricing or
        export; nothing for quantizers that keep their ranges (HGQ2's activation quantizers wrap: `trace_minmax`)."""

    def build_quantizer(self, text: str, where: str):
        """Its quantizer for one of fpgaprune's quantizer texts (`quantize/spec.py`); one line naming `where`."""
        raise QuantizationConfigError(f"{where}: {self.name} takes no quantizer texts")

    def activation_mismatch(self, layer, text: str) -> str | None:
        """Why the activation quantizer `text` cannot stand for the activation of a layer (its record, of any
        framework) in one line, or None."""
        return None

    def ebops(self, model) -> dict | None:
        """The quantization library's own cost per layer (HGQ2's EBOPs), or None."""
        return None

    def is_quantized(self, layer) -> bool:
        """Whether the layer's weights or activations are quantized."""
        return False

    def quantizer_type(self, quantizer, activation: bool = False):
        """The fixed-point type (`quantize.fixed_types.FixedType`) of a quantizer's outputs, or None."""
        return None

    def zero_of(self, quantizer) -> float:
        """What the quantizer makes of a weight that is 0 (a pruned weight needs 0.0)."""
        return 0.0
