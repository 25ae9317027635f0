"""Derived accumulators hold the worst case of every output channel, checked in integer fixed-point emulation."""

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.framework import front_end_of
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.quantize import to_qkeras
from fpgaprune.quantize.fixed_types import FixedType, input_type
from fpgaprune.record import record_of, resolved
from fpgaprune.tfk import keras

L = keras.layers


def quantizer_type(quantizer, activation=False):
    """The quantizer's fixed type, as its own front end reads it."""
    return front_end_of(quantizer).quantizer_type(quantizer, activation)


def test_fixed_types_by_hand():
    from qkeras import get_quantizer

    assert quantizer_type(get_quantizer("quantized_bits(6,0,alpha=1)")) == FixedType(6, 1, True)
    assert quantizer_type(get_quantizer("quantized_bits(8,3,alpha=1)")) == FixedType(8, 4, True)
    assert quantizer_type(get_quantizer("quantized_relu(6,2)"), activation=True).hls() == "ufixed<6,2,RND_CONV,SAT>"
    assert quantizer_type(get_quantizer("quantized_bits(4,0,alpha='auto')")) is None
    assert FixedType.covering(-3.0, 2.5, 2) == FixedType(5, 3, True)  # [-4, 3.75] on quarters
    assert FixedType.covering(0.0, 1.0, 4) == FixedType(5, 1, False)
    assert FixedType.covering(-0.25, 0.125, 3) == FixedType(2, -1, True)  # {-0.25, -0.125, 0, 0.125}
    assert FixedType.covering(-0.5, 0.375, 3) == FixedType(3, 0, True)
    assert input_type(np.arange(17) / 16.0).hls() == "ufixed<5,1>"
    assert input_type(np.array([-1.5, 0.75])).hls() == "fixed<4,2>"


def random_model(seed, padding, prune_fraction):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    model = keras.Sequential(
        [
            keras.Input((7, 7, 2)),
            L.Conv2D(5, 3, padding=padding, name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(4, 3, name="conv2"),
            L.Flatten(name="flatten"),
            L.Dense(6, name="fc"),
        ]
    )
    for layer in model.layers:
        if layer.weights:
            layer.set_weights([rng.normal(scale=0.7, size=w.shape).astype(np.float32) for w in layer.get_weights()])
    manifest = fp.MaskManifest()
    for name in ("conv1", "conv2", "fc"):
        shape = model.get_layer(name).kernel.shape
        manifest.prune(f"{name}/kernel", where=rng.random(shape) < prune_fraction)
    bits = int(rng.integers(3, 9))
    spec = {
        "default": {
            "kernel": f"quantized_bits({bits},0,alpha=1)",
            "bias": "quantized_bits(8,3,alpha=1)",
            "activation": f"quantized_relu({bits},2)",
        }
    }
    return to_qkeras(fp.hold(model, manifest), spec)


def emulate_extremes(layer, types, lo, hi, in_frac):
    """Integer emulation of one layer: each output channel's largest and smallest sum, every input at the end of
    its range that matches its weight's sign; returns them in accumulator units (Python ints, no overflow)."""
    weights = np.asarray(layer.kernel_quantizer_internal(layer.kernel), np.float64).reshape(-1, layer.kernel.shape[-1])
    bias = np.asarray(layer.bias_quantizer_internal(layer.bias), np.float64)
    w_frac, b_frac, acc_frac = types["weight"].frac, types["bias"].frac, types["accum"].frac
    w_int = np.round(weights * 2.0**w_frac).astype(np.int64)
    assert np.array_equal(w_int / 2.0**w_frac, weights)  # the weights lie on the weight type's grid
    assert acc_frac >= w_frac + in_frac and acc_frac >= b_frac  # products and bias are exact
    x_lo, x_hi = round(lo * 2**in_frac), round(hi * 2**in_frac)
    assert x_lo / 2**in_frac == lo and x_hi / 2**in_frac == hi
    up = 2 ** (acc_frac - w_frac - in_frac)
    extremes = []
    for column in range(w_int.shape[1]):
        w = [int(v) * up for v in w_int[:, column]]
        b = round(bias[column] * 2**b_frac) * 2 ** (acc_frac - b_frac)
        extremes.append(
            (sum(v * (x_lo if v > 0 else x_hi) for v in w) + b, sum(v * (x_hi if v > 0 else x_lo) for v in w) + b)
        )
    return extremes


@pytest.mark.parametrize("seed", range(6))
def test_accumulators_hold_the_worst_case_input(seed):
    padding = ["valid", "same"][seed % 2]
    model = random_model(seed, padding, prune_fraction=0.3)
    source = FixedType(5, 1, False)
    plan = derive_precisions(record_of(model), source)
    assert plan.notes == []
    lo, hi, frac = source.lo, source.hi, source.frac
    for name in ("conv1", "conv2", "fc"):
        types = plan.types[name]
        if name == "conv1" and padding == "same":
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        extremes = emulate_extremes(model.get_layer(name), types, lo, hi, frac)
        accum = types["accum"]
        smallest, largest = min(e[0] for e in extremes), max(e[1] for e in extremes)
        assert -(2 ** (accum.width - 1)) <= smallest and largest <= 2 ** (accum.width - 1) - 1, (name, accum)
        if name == "conv1":  # relu1 (quantized_relu) follows: its type's range is the next input range
            relu = plan.types["relu1"]["result"]
            lo, hi, frac = relu.lo, relu.hi, relu.frac
        else:  # a linear layer: the next input range is what this one can actually produce
            lo, hi, frac = smallest / 2**accum.frac, largest / 2**accum.frac, accum.frac


def test_pruning_narrows_the_accumulator():
    dense = random_model(7, "valid", prune_fraction=0.0)
    pruned = random_model(7, "valid", prune_fraction=0.8)
    source = FixedType(5, 1, False)
    widths = [derive_precisions(record_of(m), source).types["conv1"]["accum"].integer for m in (dense, pruned)]
    assert widths[1] < widths[0]


def test_hls_config_names_every_inserted_node():
    model = random_model(1, "same", prune_fraction=0.3)
    plan = derive_precisions(record_of(model), FixedType(5, 1, False))
    config = plan.hls_layer_config()
    assert plan.input_name.startswith("input") and config[plan.input_name]["Precision"]["result"] == "ufixed<5,1>"
    assert set(config) == {
        plan.input_name,
        "conv1",
        "zp2d_conv1",
        "conv1_linear",
        "relu1",
        "conv2",
        "conv2_linear",
        "fc",
        "fc_linear",
    }
    assert config["conv1"]["Precision"]["accum"] == config["conv1"]["Precision"]["result"]
    assert config["relu1"]["Precision"]["result"].endswith(",RND_CONV,SAT>")


def test_depthwise_accumulator_holds_the_worst_case_input():
    keras.utils.set_random_seed(11)
    rng = np.random.default_rng(11)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 3)),
            L.DepthwiseConv2D(3, depth_multiplier=2, name="dw"),
            L.Flatten(name="flatten"),
            L.Dense(4, name="fc"),
        ]
    )
    where = rng.random((3, 3, 3, 2)) < 0.3
    spec = {"default": {"kernel": "quantized_bits(5,0,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}}
    quantized = to_qkeras(fp.hold(model, fp.MaskManifest().prune("dw", where=where)), spec)
    source = FixedType(5, 1, False)
    plan = derive_precisions(record_of(quantized), source)
    assert plan.notes == []
    layer = quantized.get_layer("dw")
    types = plan.types["dw"]
    weights = np.asarray(layer.depthwise_quantizer_internal(layer.depthwise_kernel), np.float64).reshape(9, 6)
    bias = np.asarray(layer.bias_quantizer_internal(layer.bias), np.float64)
    accum = types["accum"]
    for column in range(6):  # output channel c * 2 + j reads only input channel c: 9 taps
        w = weights[:, column]
        largest = np.where(w > 0, w * source.hi, w * source.lo).sum() + bias[column]
        smallest = np.where(w > 0, w * source.lo, w * source.hi).sum() + bias[column]
        assert accum.lo <= smallest and largest <= accum.hi
        assert float(largest * 2**accum.frac).is_integer() and float(smallest * 2**accum.frac).is_integer()


def test_derived_hls_config_merges_in_order():
    from fpgaprune.hls import derived_hls_config

    model = random_model(2, "valid", prune_fraction=0.3)
    overrides = {"LayerName": {"fc": {"Precision": {"result": "fixed<24,12>"}}}, "Model": {"ReuseFactor": 4}}
    config, notes = derived_hls_config(resolved(model), FixedType(5, 1, False), overrides)
    derived = derive_precisions(record_of(model), FixedType(5, 1, False)).types
    assert notes == []
    assert config["Model"]["ReuseFactor"] == 4
    assert config["LayerName"]["fc"]["Precision"]["result"] == "fixed<24,12>"  # the user's override wins
    assert config["LayerName"]["fc"]["Precision"]["accum"] == derived["fc"]["accum"].hls()  # derived beats hls4ml
    assert config["LayerName"]["conv1"]["Precision"]["result"] == derived["conv1"]["result"].hls()
    assert "Trace" in config["LayerName"]["conv1"]  # hls4ml's own entries are kept
