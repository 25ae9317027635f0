"""Export: the model as hls4ml's IR, the types that make C-sim exact, and the reference forward C-sim is compared
with."""

from abc import ABC, abstractmethod

from fpgaprune.frontends.describe import describe
from fpgaprune.hls.precision.plan import PrecisionPlan


class HlsExport(ABC):
    """Export."""

    def describe(self, model):
        """The model as fpgaprune's record (`record.ModelRecord`), which the stages after quantization read."""
        return describe(self, model)

    def derive_types(self, bound, input_type):
        """The hls4ml types of each node (`hls.precision.PrecisionPlan`) of a bound model (`record.Bound`) that
        make C-sim equal the quantized model; an empty plan leaves every node at the config's precisions."""
        return PrecisionPlan(bound.record.input_name)

    @abstractmethod
    def reference_probe(self, model, batch_size: int = 512):
        """`probe(x)`: every layer's values for inputs `x` (`quantize.layer_values.LayerValues`)."""

    @abstractmethod
    def exported_model(self, model, input_shape: tuple | None = None):
        """The model as its converter takes it (a Keras 3 model: its tf_keras twin); `input_shape`: one sample's,
        for a framework whose models do not record it."""

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

    def layer_tolerances(self, model, types: dict, input_type=None) -> dict | None:
        """{layer: its C-sim tolerance} where the front end states its own bounds (HGQ2); None: derived from the
        types (`hls/tolerance.py`)."""
        return None
