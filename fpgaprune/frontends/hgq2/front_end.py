"""The HGQ2 front end as the protocol (`frontends.base.FrontEnd`): Keras 3 models whose layers are HGQ2's, held,
trained (QAT with the EBOPs penalty) and exported as they are, through hls4ml's Keras 3 converter. A plain Keras 3
model becomes one through `quantized_twin` when a run's quantization library is HGQ2."""

import numpy as np

from fpgaprune.frontends.hgq2 import hls, quantizers
from fpgaprune.frontends.hgq2.settings import Hgq2Settings
from fpgaprune.frontends.hgq2.tolerance import layer_tolerances
from fpgaprune.frontends.hgq2.types import hardware_types, input_kif, kernel_input_kif, lane_quantizer
from fpgaprune.frontends.keras3.front_end import Keras3FrontEnd
from fpgaprune.model.layer_kinds import kind_of
from fpgaprune.record.model_record import InputQuantizer


class Hgq2FrontEnd(Keras3FrontEnd):
    files_module = "fpgaprune.frontends.hgq2.files"  # Keras 3's files and HGQ2's (asked first for both)
    name = "Keras 3 + HGQ2"
    asked_order = 20
    quantizer_library = "HGQ2"
    library_key = "hgq2"  # `quantization.library`
    quantizes = True  # QAT trains the model itself; hls4ml's Keras 3 converter exports it
    framework_modules = ("hgq", "keras")

    @staticmethod
    def owns(model_or_layer) -> bool:
        """An HGQ2 layer or quantizer, or a Keras 3 model with one."""
        if quantizers.is_hgq2(model_or_layer):
            return True
        layers = getattr(model_or_layer, "layers", None)
        return not isinstance(model_or_layer, type) and bool(layers) and any(map(quantizers.is_hgq2, layers))

    @staticmethod
    def bind_layers() -> None:
        import fpgaprune.frontends.hgq2.layers  # noqa: F401  (imports hgq: ImportError where it is not installed)

    @staticmethod
    def check_available(what: str) -> None:
        """HGQ2 is here (the registry found it)."""

    # Quantizers: HGQ2's, per weight
    weight_quantizer = staticmethod(quantizers.weight_quantizer)
    quantized = staticmethod(quantizers.quantized)
    quantizer_bits = staticmethod(quantizers.quantizer_bits)
    quantizer_texts = staticmethod(quantizers.quantizer_texts)
    quantizer_range = staticmethod(quantizers.quantizer_range)
    is_quantized = staticmethod(quantizers.is_hgq2)
    ebops = staticmethod(quantizers.ebops)
    restore_quantizer = staticmethod(quantizers.restore_quantizer)

    @staticmethod
    def activation_quantizer(layer):
        return None

    @staticmethod
    def quantizer_type(quantizer, activation: bool = False):
        """None: an HGQ2 quantizer has a type per weight (hls4ml's BitExact pass gives the array the widest)."""
        return None

    def with_holds(self, model, groups: dict, keep_holds: bool):
        """Keras 3's holds on the weights, and the held weights' bit widths held beside them (`holds.hold_bits`)."""
        from fpgaprune.frontends.hgq2.holds import hold_bits

        held = super().with_holds(model, groups, keep_holds)
        if keep_holds:
            hold_bits(held)
        return held

    @staticmethod
    def layer_from_config(layer, config: dict):
        """HGQ2's `from_config` deserializes the whole config, so a live constraint (a hold) goes in serialized."""
        import keras

        if quantizers.is_hgq2(layer):
            config = {
                key: keras.saving.serialize_keras_object(value)
                if isinstance(value, keras.constraints.Constraint)
                else value
                for key, value in config.items()
            }
        return layer.__class__.from_config(config)

    @staticmethod
    def enforce(model) -> None:
        from fpgaprune.frontends.hgq2.holds import hold_bits
        from fpgaprune.frontends.tensorflow.holds import enforce

        enforce(model)
        hold_bits(model)

    @staticmethod
    def quantized_twin(model, quantization, batchnorm: str = "fold"):
        """The HGQ2 twin of a Keras 3 model (a model with HGQ2 layers: a copy), holds and their bit widths carried
        over."""
        from fpgaprune.frontends.hgq2.holds import hold_bits, warn_unrepresentable
        from fpgaprune.frontends.hgq2.twin import hgq2_twin

        Keras3FrontEnd.check_model(model)
        settings = Hgq2Settings.of((quantization or {}).get("hgq2"))
        twin = hgq2_twin(model, settings)
        hold_bits(twin)
        warn_unrepresentable(twin)
        return twin

    @staticmethod
    def quantizer_sources(model, quantization, default_given: bool = True) -> dict:
        """{layer: where its quantizers come from}: HGQ2's own, or the run's `quantization.hgq2` settings."""
        return {
            layer.name: "its own HGQ2 quantizers, kept" if quantizers.is_hgq2(layer) else "quantization.hgq2"
            for layer in model.layers
            if quantizers.is_hgq2(layer) or getattr(kind_of(layer), "quantizers", ())
        }

    def fit(self, model, x, y, **settings) -> None:
        """Keras' `fit`, with HGQ2's bit widths kept out of AdamW's weight decay."""
        from fpgaprune.frontends.hgq2.training import fit

        fit(model, x, y, **settings)

    @staticmethod
    def calibrate(model, x) -> None:
        """HGQ2's `trace_minmax`: the datalane's integer bits (WRAP quantizers) set from the data's range."""
        from hgq.utils import trace_minmax

        trace_minmax(model, np.asarray(x, np.float32), verbose=False)

    @staticmethod
    def input_quantizer(layer):
        """An HGQ2 layer's input quantizer (a standalone `Quantizer` layer's own): its types per value
        (`input_kif`), its modes, and its types per kernel row as hls4ml's DA pass computes them (`kernel_input_kif`)
        where the export generates its products (a QConv3D or QEinsumDense runs stock code: no rows)."""
        kif = input_kif(layer) if quantizers.is_hgq2(layer) else None
        if kif is None:
            return None
        generated = getattr(kind_of(layer), "kernel_sparse", False) and getattr(layer, "kernel", None) is not None
        quantizer = lane_quantizer(layer).quantizer
        return InputQuantizer(
            *kif,
            str(quantizer.round_mode),
            str(quantizer.overflow_mode),
            kernel_input_kif(layer) if generated else None,
        )

    # Export: hls4ml's Keras 3 converter, with hls4ml's BitExact types
    @staticmethod
    def exported_model(model, input_shape=None):
        Keras3FrontEnd.check_model(model)
        return model

    @staticmethod
    def derive_types(bound, input_type):
        """The kernel layers' types as BitExact will give them, for pricing (`types.py`); the export leaves the
        typing to BitExact."""
        return hardware_types(bound.model)

    hls_config = staticmethod(hls.config_from_model)
    to_hls4ml = staticmethod(hls.convert_model)  # the types BitExact gave written into the export's config
    conversion_problem = staticmethod(hls.conversion_problem)
    renamed = staticmethod(hls.renamed)

    @staticmethod
    def layer_tolerances(model, types: dict, input_type=None) -> dict:
        """One step of each traced layer's BitExact type, modulo its period; the logits bit-exact (`tolerance.py`)."""
        return layer_tolerances(model, types, input_type)


FRONT_END = Hgq2FrontEnd()
