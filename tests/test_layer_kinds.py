"""The one table of layer kinds: every entry names real classes, weights, constraints and quantizers, and the
modules along the data path read their tables from it."""

import numpy as np
import pytest

from fpgaprune.layer_kinds import BY_CLASS, KINDS, classes_where, kind_of
from fpgaprune.tfk import keras, qkeras_objects

# A small input and the constructor arguments that build each kind.
BUILD = {"Conv1D": ((8, 3), {"filters": 2, "kernel_size": 3}), "Conv2D": ((6, 6, 3), {"filters": 2, "kernel_size": 3}),
         "Dense": ((5,), {"units": 2}), "DepthwiseConv2D": ((6, 6, 3), {"kernel_size": 3}),
         "SeparableConv2D": ((6, 6, 3), {"filters": 2, "kernel_size": 3}), "LSTM": ((4, 3), {"units": 2}),
         "GRU": ((4, 3), {"units": 2})}
QUANTIZER = "quantized_bits(6, 0, alpha=1)"


def _built(class_name: str, arguments: dict, shape: tuple):
    objects = qkeras_objects()
    cls = objects[class_name] if class_name in objects else getattr(keras.layers, class_name)
    layer = cls(**arguments)
    layer(np.zeros((1, *shape), np.float32))
    return layer


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.float_class)
def test_each_kind_names_weights_constraints_and_quantizers_its_classes_have(kind):
    shape, arguments = BUILD[kind.float_class]
    plain = _built(kind.float_class, arguments, shape)
    quantized = _built(kind.qkeras_class, {**arguments, **{arg: QUANTIZER for arg, _ in kind.quantizers}}, shape)
    for weight in kind.weights:
        assert weight.variable(plain) is not None and weight.variable(quantized) is not None, weight
        assert weight.constraint_key in plain.get_config() or weight.constraint_key in plain.cell.get_config()
        assert weight.quantizer_of(quantized) is not None and weight.quantizer_of(plain) is None, weight
    if kind.default_weight:
        assert kind.default_weight in [weight.name for weight in kind.weights]
    if kind.channels:
        assert plain.get_config()[kind.channels] == plain.get_weights()[0].shape[-1]
    assert kind_of(kind.float_class) is kind_of(kind.qkeras_class) is kind


def test_the_modules_read_their_tables_from_the_registry():
    from fpgaprune.inspection import KERNEL_LAYERS
    from fpgaprune.pruning.structures import ALLOWED
    from fpgaprune.quantize.convert import Q_LAYERS
    from fpgaprune.resources.entry_costs import HARDWARE_LAYERS
    from fpgaprune.selection import MASKABLE_WEIGHTS
    from fpgaprune.strip.graph import PRODUCERS

    assert set(MASKABLE_WEIGHTS) == set(BY_CLASS)
    assert {name: twin for name, (twin, _) in Q_LAYERS.items()} == {k.float_class: k.qkeras_class for k in KINDS}
    assert set(ALLOWED) == set(classes_where(lambda kind: bool(kind.structures)))
    assert set(PRODUCERS) == {"Conv1D", "Conv2D", "Dense"} == set(classes_where(lambda k: k.kernel_sparse, False))
    assert set(HARDWARE_LAYERS) == {"QConv1D", "QConv2D", "QDense"}
    assert set(KERNEL_LAYERS) == {"Conv1D", "Conv2D", "QConv1D", "QConv2D"}


def test_hls4ml_node_classes_map_to_kinds_exactly():
    import hls4ml.model.layers as hls_layers

    from fpgaprune.layer_kinds import BY_HLS4ML_NODE, kind_of_node

    assert all(isinstance(getattr(hls_layers, name, None), type) for name in BY_HLS4ML_NODE), BY_HLS4ML_NODE
    sparse = {name for name, kind in BY_HLS4ML_NODE.items() if kind.kernel_sparse}
    assert sparse == {"Dense", "Conv1D", "Conv2D", "Conv2DBatchnorm"}
    for name in ("DepthwiseConv1D", "DepthwiseConv2D", "Conv2DBatchnorm"):
        backend_class = type(f"Vitis{name}", (getattr(hls_layers, name),), {})  # as hls4ml's backends wrap them
        node = object.__new__(backend_class)  # a subclass of Conv1D/Conv2D, not that kind by inheritance
        expected = {"DepthwiseConv1D": None, "DepthwiseConv2D": "DepthwiseConv2D", "Conv2DBatchnorm": "Conv2D"}[name]
        assert (kind_of_node(node).float_class if kind_of_node(node) else None) == expected
