"""The one framework-neutral table of layer kinds: every front end binds real classes to it, every entry names
weights, constraints and quantizers those classes have, a subclass is its base's kind, and the modules along the
data path ask it."""

import numpy as np
import pytest

from fpgaprune.frontends.qkeras.layers import CLASSES, OTHER_LAYERS
from fpgaprune.frontends.qkeras.quantizers import weight_quantizer
from fpgaprune.model.layer_kinds import BY_NAME, KINDS, kind_of
from fpgaprune.tfk import keras

# A small input and the constructor arguments that build each kind.
BUILD = {
    "Conv1D": ((8, 3), {"filters": 2, "kernel_size": 3}),
    "Conv2D": ((6, 6, 3), {"filters": 2, "kernel_size": 3}),
    "Dense": ((5,), {"units": 2}),
    "DepthwiseConv2D": ((6, 6, 3), {"kernel_size": 3}),
    "SeparableConv2D": ((6, 6, 3), {"filters": 2, "kernel_size": 3}),
    "LSTM": ((4, 3), {"units": 2}),
    "GRU": ((4, 3), {"units": 2}),
}
QUANTIZER = "quantized_bits(6, 0, alpha=1)"
# Kinds QKeras has no layer for: only HGQ2 binds them (tests/hgq2/test_hgq2_holds.py checks its classes).
HGQ2_ONLY = {"Conv3D", "EinsumDense"}
# QKeras' fused layers: a quantized class with no float twin (tests/quantize/test_fused_layers.py takes one whole)
FUSED = {"Conv2DBatchnorm": ((6, 6, 3), {"filters": 2, "kernel_size": 3})}
QKERAS_KINDS = [kind for kind in KINDS if kind.name not in HGQ2_ONLY and kind.name not in FUSED]


def _built(cls, arguments: dict, shape: tuple):
    layer = cls(**arguments)
    layer(np.zeros((1, *shape), np.float32))
    return layer


def _record_of(cls, arguments: dict, shape: tuple):
    """The record of one such layer, in a model of its own (what the export's stages read)."""
    from fpgaprune.record import record_of

    source = keras.Input(shape)
    layer = cls(**arguments, name="layer")
    return record_of(keras.Model(source, layer(source))).layers["layer"]


@pytest.mark.parametrize("kind", QKERAS_KINDS, ids=lambda kind: kind.name)
def test_each_kind_names_weights_constraints_and_quantizers_its_classes_have(kind):
    shape, arguments = BUILD[kind.name]
    float_class, quantized_class = CLASSES[kind.name]
    plain = _built(float_class, arguments, shape)
    quantized = _built(
        quantized_class, {**arguments, **{f"{arg}_quantizer": QUANTIZER for arg, _ in kind.quantizers}}, shape
    )
    for weight in kind.weights:
        assert weight.variable(plain) is not None and weight.variable(quantized) is not None, weight
        assert weight.constraint_key in plain.get_config() or weight.constraint_key in plain.cell.get_config()
        assert weight_quantizer(quantized, weight.role) is not None, weight
        assert weight_quantizer(plain, weight.role) is None, weight
    if kind.default_weight:
        assert kind.default_weight in [weight.name for weight in kind.weights]
    if kind.channels:
        assert plain.get_config()[kind.channels] == plain.get_weights()[0].shape[-1]
    assert kind_of(plain) is kind_of(quantized) is kind_of(float_class.__name__) is kind


def test_a_fused_kind_names_weights_constraints_and_quantizers_its_class_has():
    import qkeras

    kind = BY_NAME["Conv2DBatchnorm"]
    shape, arguments = FUSED[kind.name]
    layer = _built(
        qkeras.QConv2DBatchnorm, {**arguments, "kernel_quantizer": QUANTIZER, "bias_quantizer": QUANTIZER}, shape
    )
    for weight in kind.weights:
        assert weight.variable(layer) is not None and weight.constraint_key in layer.get_config(), weight
        assert weight_quantizer(layer, weight.role) is not None, weight
    assert kind_of(layer) is kind_of("QConv2DBatchnorm") is kind and not kind.channels  # its channels stay


def test_every_kind_is_bound_by_the_quantizing_front_end():
    assert set(CLASSES) == set(BY_NAME) - HGQ2_ONLY - set(FUSED)


def test_a_users_subclass_is_its_bases_kind_and_other_layers_are_none():
    class ScaledConv(keras.layers.Conv2D):  # a user's subclass: a Conv2D to fpgaprune
        pass

    class DeeperScaledConv(ScaledConv):
        pass

    assert kind_of(ScaledConv(2, 3)) is kind_of(DeeperScaledConv) is BY_NAME["Conv2D"]
    for other in OTHER_LAYERS:  # derived from Conv2D/Conv1D, but their kernels mean something else
        assert kind_of(other) is None, other
    assert kind_of("Conv2DTranspose") is None and kind_of(keras.layers.Flatten) is None


def test_a_subclass_that_changes_the_computation_is_one_line_when_quantized():
    import fpgaprune as fp
    from fpgaprune.errors import QuantizationConfigError

    class DoubledDense(keras.layers.Dense):
        def call(self, inputs):
            return 2.0 * super().call(inputs)

    model = keras.Sequential([keras.Input((4,)), DoubledDense(3, name="doubled")])
    with pytest.raises(
        QuantizationConfigError,
        match=r"layer 'doubled' is a DoubledDense, a subclass of Dense "
        r"with its own call",
    ):
        fp.to_qkeras(model, {"default": {"kernel": QUANTIZER, "bias": QUANTIZER}})


def test_the_modules_along_the_data_path_ask_the_table():
    from fpgaprune.frontends.tensorflow.strip_graph import produces_channels
    from fpgaprune.pruning.structures import allowed_structures, prunable
    from fpgaprune.report.inspection import _has_kernels
    from fpgaprune.resources.entry_costs import is_hardware_layer
    from fpgaprune.selection import maskable_weights

    for kind in QKERAS_KINDS:
        float_class, quantized_class = CLASSES[kind.name]
        layer = _built(float_class, *BUILD[kind.name][::-1])
        assert maskable_weights(layer) == kind.weights
        assert allowed_structures(layer) == (kind.structures or ("element",))
        assert prunable(layer) == bool(kind.structures)
        assert produces_channels(layer) == kind.channels
        assert _has_kernels(layer) == ("kernel" in kind.structures)
        # a float layer: its products are not the export's
        assert not is_hardware_layer(_record_of(float_class, *BUILD[kind.name][::-1]))
    sparse = {kind.name for kind in KINDS if kind.kernel_sparse}
    assert sparse == {"Conv1D", "Conv2D", "Dense", "Conv2DBatchnorm"}
    quantized = _record_of(
        CLASSES["Dense"][1], {"units": 2, "kernel_quantizer": QUANTIZER, "bias_quantizer": QUANTIZER}, (5,)
    )
    assert is_hardware_layer(quantized)


def test_hls4ml_node_classes_map_to_kinds_exactly():
    import hls4ml.model.layers as hls_layers

    from fpgaprune.model.layer_kinds import BY_HLS4ML_NODE, kind_of_node

    assert all(isinstance(getattr(hls_layers, name, None), type) for name in BY_HLS4ML_NODE), BY_HLS4ML_NODE
    sparse = {name for name, kind in BY_HLS4ML_NODE.items() if kind.kernel_sparse}
    assert sparse == {"Dense", "Conv1D", "Conv2D", "Conv2DBatchnorm"}
    for name in ("DepthwiseConv1D", "DepthwiseConv2D", "Conv2DBatchnorm"):
        backend_class = type(f"Vitis{name}", (getattr(hls_layers, name),), {})  # as hls4ml's backends wrap them
        node = object.__new__(backend_class)  # a subclass of Conv1D/Conv2D, not that kind by inheritance
        expected = {"DepthwiseConv1D": None, "DepthwiseConv2D": "DepthwiseConv2D", "Conv2DBatchnorm": "Conv2DBatchnorm"}
        expected = expected[name]
        assert (kind_of_node(node).name if kind_of_node(node) else None) == expected
