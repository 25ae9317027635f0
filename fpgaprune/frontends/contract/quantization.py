"""Quantization and QAT: the quantized twin, the quantizer texts a run names (whether each quantizes with this
library and keeps 0), the reference copy and the library's own costs. What a quantizer is (its type, what it
makes of 0) is in the record."""

from abc import ABC, abstractmethod

from fpgaprune.errors import FpgapruneError


class Quantization(ABC):
    """Quantization and QAT."""

    quantizer_library: str = "the quantized model"  # what C-sim is compared with ("QKeras", "Brevitas")
    library_key: str | None = None  # the `quantization.library` it is ("qkeras", "hgq2"), if it is one

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

    def quantizer_text_problem(self, text: str, role: str, where: str) -> str | None:
        """Why the run config's quantizer `text` for `role` (at `where`) cannot quantize with this library, in one
        line, or None: a text it cannot build, or a weight quantizer that maps 0 elsewhere (pruned weights must
        stay 0 after it)."""
        try:
            quantizer = self.build_quantizer(text, where)
        except FpgapruneError as error:
            return str(error).split(": ", 1)[-1]
        zero = self.zero_of(quantizer) if role in self.WEIGHT_ROLES else 0.0
        if zero != 0.0:
            return (
                f"found {text!r}, which maps 0 to {zero:g}; pruned weights need a quantizer that keeps 0 (e.g. "
                f"{self.DEFAULT_QUANTIZERS['kernel']})"
            )
        return None

    def activation_mismatch(self, layer, text: str) -> str | None:
        """Why the activation quantizer `text` cannot stand for the activation of a layer (its record, of any
        framework) in one line, or None."""
        return None

    def ebops(self, model) -> dict | None:
        """The quantization library's own cost per layer (HGQ2's EBOPs), or None."""
        return None
