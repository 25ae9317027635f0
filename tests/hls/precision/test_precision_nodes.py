"""Derived types for the nodes beyond Conv/Dense: `<layer>_alpha` scales, QBatchNormalization, QLSTM and QGRU.

Each is checked against the model itself: exact grids, and ranges that hold the worst case of every channel.
"""

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.frontends.qkeras.alpha import factor_scales
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.quantize import to_qkeras
from fpgaprune.quantize.fixed_types import FixedType
from fpgaprune.record import record_of
from fpgaprune.tfk import keras

L = keras.layers
SOURCE = FixedType(5, 1, False)  # inputs in [0, 31/16] on a 1/16 grid, like the digits


def on_grid(values, fixed: FixedType) -> bool:
    scaled = np.asarray(values, np.float64) * 2.0**fixed.frac
    return bool(np.all(scaled == np.round(scaled)) and np.all(values >= fixed.lo) and np.all(values <= fixed.hi))


def column_extremes(weights, bias, lo, hi):
    """Each column's smallest and largest sum, every input at the end of its range matching its weight's sign."""
    largest = np.where(weights > 0, weights * hi, weights * lo).sum(axis=0) + bias
    smallest = np.where(weights > 0, weights * lo, weights * hi).sum(axis=0) + bias
    return smallest, largest


def seeded_weights(model, seed):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.weights:
            layer.set_weights([rng.normal(scale=0.6, size=w.shape).astype(np.float32) for w in layer.get_weights()])


@pytest.mark.parametrize("seed", range(3))
def test_auto_po2_alpha_nodes_are_exact_and_hold_every_channel(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((5, 5, 2)), L.Conv2D(4, 3, name="conv"), L.Flatten(name="flatten"), L.Dense(3, name="fc")]
    )
    seeded_weights(model, seed)
    spec = {"default": {"kernel": "quantized_bits(5,0,alpha='auto_po2')", "bias": "quantized_bits(8,3,alpha=1)"}}
    quantized = to_qkeras(fp.hold(model, prune=["conv[:, :, :, 1]", "fc[:, 2]"]), spec)
    plan = derive_precisions(record_of(quantized), SOURCE)
    assert plan.notes == []
    lo, hi = SOURCE.lo, SOURCE.hi
    for name in ("conv", "fc"):
        layer = quantized.get_layer(name)
        grid, scale = factor_scales(layer.kernel_quantizer_internal, layer.kernel)
        np.testing.assert_array_equal(grid * scale, np.asarray(layer.kernel_quantizer_internal(layer.kernel)))
        assert scale[1 if name == "conv" else 2] == 1.0  # the dead channel
        types, alpha = plan.types[name], plan.types[f"{name}_alpha"]
        assert on_grid(grid, types["weight"]) and on_grid(scale, alpha["scale"])
        smallest, largest = column_extremes(grid.reshape(-1, grid.shape[-1]), 0.0, lo, hi)
        assert on_grid(np.concatenate([smallest, largest]), types["accum"])
        bias = np.asarray(layer.bias_quantizer_internal(layer.bias), np.float64)
        outputs = np.concatenate([smallest * scale + bias, largest * scale + bias])
        assert on_grid(outputs, alpha["result"])  # acc * scale + bias: exact, and in range
        lo, hi = float(outputs.min()), float(outputs.max())


def test_auto_alpha_scales_are_noted_as_rounded():
    model = keras.Sequential([keras.Input((6,)), L.Dense(4, name="fc")])
    seeded_weights(model, 0)
    spec = {"default": {"kernel": "quantized_bits(5,0,alpha='auto')", "bias": "quantized_bits(8,3,alpha=1)"}}
    plan = derive_precisions(record_of(to_qkeras(model, spec)), SOURCE)
    assert [note.split(":")[0] for note in plan.notes] == ["fc_alpha"]
    assert plan.types["fc_alpha"]["scale"].width >= 16


@pytest.mark.parametrize("seed", range(3))
def test_batchnorm_result_holds_every_channel(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((4, 4, 1)), L.Conv2D(3, 2, name="conv"), L.BatchNormalization(name="bn"), L.ReLU(name="relu")]
    )
    seeded_weights(model, seed)
    bn = model.get_layer("bn")
    rng = np.random.default_rng(seed)
    bn.set_weights([rng.normal(size=3), rng.normal(size=3), rng.normal(size=3), rng.uniform(0.1, 2.0, 3)])
    spec = {
        "default": {
            "kernel": "quantized_bits(6,0,alpha=1)",
            "bias": "quantized_bits(8,3,alpha=1)",
            "activation": "quantized_relu(6,2)",
        }
    }
    quantized = to_qkeras(model, spec, batchnorm="quantize")
    layer = quantized.get_layer("bn")
    assert type(layer).__name__ == "QBatchNormalization"
    assert all(getattr(layer, f"{p}_quantizer") is None for p in ("gamma", "beta", "mean", "variance"))
    plan = derive_precisions(record_of(quantized), SOURCE)
    assert [note.split(":")[0] for note in plan.notes] == ["bn"]  # float scales: kept to 16 bits, noted
    conv = quantized.get_layer("conv")
    kernel = np.asarray(conv.kernel_quantizer_internal(conv.kernel), np.float64).reshape(-1, 3)
    low, high = column_extremes(kernel, np.asarray(conv.bias_quantizer_internal(conv.bias)), SOURCE.lo, SOURCE.hi)
    gamma, beta, mean, variance = (np.asarray(w, np.float64) for w in layer.get_weights())
    scale = gamma / np.sqrt(variance + layer.epsilon)
    bias = beta - mean * scale
    ends = np.stack([scale * low + bias, scale * high + bias])  # each channel at both ends of its own range
    result = plan.types["bn"]["result"]
    assert result.lo <= ends.min() and ends.max() <= result.hi
    assert result.frac == plan.types["conv"]["accum"].frac + plan.types["bn"]["scale"].frac  # exact product
    step = 2.0 ** -plan.types["bn"]["scale"].frac
    assert step <= 2.0**-15 * np.abs(scale).min()  # every scale kept to 16 significant bits or more


def recurrent_model(kind, seed, prune_fraction):
    keras.utils.set_random_seed(seed)
    layer = L.LSTM(5, name="rnn") if kind == "LSTM" else L.GRU(5, name="rnn")
    model = keras.Sequential([keras.Input((6, 3)), layer, L.Dense(2, name="fc")])
    seeded_weights(model, seed)
    rng = np.random.default_rng(seed)
    manifest = fp.MaskManifest()
    for weight in ("kernel", "recurrent_kernel"):
        shape = model.get_layer("rnn").cell.kernel.shape if weight == "kernel" else layer.cell.recurrent_kernel.shape
        manifest.prune(f"rnn/{weight}", where=rng.random(shape) < prune_fraction)
    spec = {"default": {"kernel": "quantized_bits(6,1,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}}
    return to_qkeras(fp.hold(model, manifest), spec)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("seed", range(3))
def test_recurrent_accumulators_hold_the_worst_case(kind, seed):
    quantized = recurrent_model(kind, seed, prune_fraction=0.3)
    plan = derive_precisions(record_of(quantized), SOURCE)
    assert [note.split(":")[0] for note in plan.notes] == ["rnn"]  # close to QKeras, not bit-exact: said
    layer, types = quantized.get_layer("rnn"), plan.types["rnn"]
    kernel = np.asarray(layer.kernel_quantizer_internal(layer.cell.kernel), np.float64)
    recurrent = np.asarray(layer.recurrent_quantizer_internal(layer.cell.recurrent_kernel), np.float64)
    bias = np.asarray(layer.bias_quantizer_internal(layer.cell.bias), np.float64)
    bias, recurrent_bias = (bias[0], bias[1]) if bias.ndim == 2 else (bias, 0.0)
    assert on_grid(kernel, types["weight"]) and on_grid(recurrent, types["recurrent_weight"])
    x_low, x_high = column_extremes(kernel, bias, SOURCE.lo, SOURCE.hi)
    h_low, h_high = column_extremes(recurrent, recurrent_bias, -1.0, 1.0)  # |h| <= 1
    accum = types["accum"]
    assert accum.lo <= (x_low + np.minimum(h_low, 0)).min() and (x_high + np.maximum(h_high, 0)).max() <= accum.hi
    assert accum.frac >= types["weight"].frac + SOURCE.frac  # W x is exact
    if kind == "LSTM":  # |c| <= 6 steps; hls4ml 1.3's lstm() needs input, result and accum typed alike
        assert types["result"] == accum and types["result"].hi >= 6.0
        assert plan.types[plan.input_name]["result"] == accum
    else:  # U h is exact too
        assert accum.frac >= types["recurrent_weight"].frac + types["result"].frac
        assert types["result"].lo <= -1.0 and types["result"].hi >= 1.0 - 2.0 ** -types["result"].frac


def test_pruning_narrows_the_recurrent_accumulator():
    widths = [
        derive_precisions(record_of(recurrent_model("GRU", 4, p)), SOURCE).types["rnn"]["accum"].integer
        for p in (0, 0.9)
    ]
    assert widths[1] < widths[0]


def test_lstm_input_is_retyped_through_a_reshape_but_never_a_quantizer():
    spec = {
        "default": {
            "kernel": "quantized_bits(6,1,alpha=1)",
            "bias": "quantized_bits(8,3,alpha=1)",
            "activation": "quantized_relu(6,2)",
        }
    }
    reshaped = keras.Sequential([keras.Input((18,)), L.Reshape((6, 3), name="rows"), L.LSTM(4, name="rnn")])
    plan = derive_precisions(record_of(to_qkeras(reshaped, spec)), SOURCE)
    assert plan.types[plan.input_name]["result"] == plan.types["rnn"]["result"] == plan.types["rnn"]["accum"]
    quantized_input = keras.Sequential([keras.Input((6, 3)), L.ReLU(name="relu"), L.LSTM(4, name="rnn")])
    plan = derive_precisions(record_of(to_qkeras(quantized_input, spec)), SOURCE)
    assert "rnn" not in plan.types and plan.types["relu"]["result"].hls() == "ufixed<6,2,RND_CONV,SAT>"
    assert any(note.startswith("rnn: hls4ml 1.3's LSTM needs its input typed like its state") for note in plan.notes)


def test_kernels_with_channel_scales_are_counted_on_their_grid():
    """Resource estimates and the manifest read the weights the hardware holds: the factored alpha=1 grid."""
    from fpgaprune.hls.manifest import quantized_kernel

    model = keras.Sequential([keras.Input((5, 5, 2)), L.Conv2D(4, 3, name="conv")])
    seeded_weights(model, 3)
    spec = {"default": {"kernel": "quantized_bits(5,0,alpha='auto_po2')", "bias": "quantized_bits(8,3,alpha=1)"}}
    quantized = to_qkeras(fp.hold(model, prune=["conv[:, :, 1, 2]"]), spec)
    layer, held = quantized.get_layer("conv"), quantized_kernel(record_of(quantized).layers["conv"])
    scaled = np.asarray(layer.kernel_quantizer_internal(layer.kernel))
    assert on_grid(held, FixedType(5, 1, True)) and not on_grid(scaled, FixedType(5, 1, True))
    np.testing.assert_array_equal(held == 0, scaled == 0)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("quantized_tanh(8)", "fixed<8,1,RND_CONV,SAT>"),
        ("quantized_sigmoid(6)", "ufixed<6,0,RND_CONV,SAT>"),
        ("quantized_tanh(4)", "fixed<4,1,RND_CONV,SAT>"),
        ("quantized_tanh(8,symmetric=True)", None),
        ("quantized_sigmoid(6,use_real_sigmoid=True)", "ufixed<6,0,RND_CONV,SAT>"),  # a table, on the same grid
        ("quantized_tanh(8,use_stochastic_rounding=True)", "fixed<8,1,RND_CONV,SAT>"),  # stochastic in training only
    ],
)
def test_hard_activation_types_hold_every_output(text, expected):
    from fpgaprune.framework import quantizing_front_end

    front = quantizing_front_end()
    quantizer = front.build_quantizer(text, "test")
    fixed = front.quantizer_type(quantizer, activation=True)
    assert (fixed.hls() if fixed else None) == expected
    if fixed is not None:  # every output QKeras can produce, both ends included, lies on the type's grid
        outputs = np.asarray(quantizer(np.linspace(-16.0, 16.0, 16385, dtype=np.float32)), np.float64)
        assert on_grid(outputs, fixed) and outputs.min() == fixed.lo and outputs.max() == fixed.hi


MERGE_OPS = {
    "Add": np.add,
    "Subtract": np.subtract,
    "Multiply": np.multiply,
    "Average": lambda a, b: (a + b) * 0.5,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
}


@pytest.mark.parametrize("kind", [*MERGE_OPS, "Concatenate"])
@pytest.mark.parametrize("seed", range(4))
def test_merge_types_hold_every_result_exactly(kind, seed):
    """Every value the merge of two fixed-point inputs can produce lies on the derived type, whose ends are
    reached (the narrowest type that holds them)."""
    from fpgaprune.hls.precision.merge import merged_range
    from fpgaprune.quantize.fixed_types import ValueRange

    rng = np.random.default_rng(seed)
    inputs = []
    for _ in range(2):
        width, signed = int(rng.integers(2, 7)), bool(rng.integers(2))
        inputs.append(FixedType(width, int(rng.integers(-1, width + 1)), signed))
    values = [np.arange(t.lo, t.hi + 2.0**-t.frac / 2, 2.0**-t.frac) for t in inputs]
    first, second = np.meshgrid(*values, indexing="ij")
    produced = np.concatenate(values) if kind == "Concatenate" else MERGE_OPS[kind](first, second).ravel()
    merged = merged_range(kind, [ValueRange(t.lo, t.hi, t.frac) for t in inputs])
    fixed = FixedType.covering(merged.lo, merged.hi, merged.frac)
    assert on_grid(produced, fixed)
    assert (produced.min(), produced.max()) == (merged.lo, merged.hi)


def test_merges_are_derived_in_a_branching_model():
    from hls_helpers import SPEC8 as spec
    from hls_helpers import branching_model

    keras.utils.set_random_seed(1)
    quantized = to_qkeras(fp.hold(branching_model(), prune=["conv2[:, :, 1, :]"]), spec)
    plan = derive_precisions(record_of(quantized), SOURCE)
    assert plan.notes == []
    relu, conv2 = plan.ranges["conv1"], plan.ranges["conv2"]
    add = plan.types["add"]["result"]
    assert add.lo <= relu.lo + conv2.lo and relu.hi + conv2.hi <= add.hi
    assert add.frac == max(relu.frac, conv2.frac)
    concat, pad = plan.types["concat"]["result"], plan.types["pad"]["result"]
    assert concat.lo <= min(plan.ranges["add"].lo, plan.ranges["conv3"].lo) and pad.lo <= 0.0 <= pad.hi
    assert concat.hi >= max(plan.ranges["add"].hi, plan.ranges["conv3"].hi) and pad == concat

    three = keras.Input((4,))
    model = keras.Model(three, L.Add(name="add3")([L.Dense(2, name=f"d{i}")(three) for i in range(3)]))
    plan = derive_precisions(record_of(to_qkeras(model, spec)), SOURCE)
    assert [note.split(":")[0] for note in plan.notes] == ["add3"] and "add3" not in plan.types
