"""The numerical profile: exact counts of the values outside each range, a bounded sample for the box plot, and
the values a quantizer receives read from one pass of the model."""

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.frontends.describe import quantizer_range
from fpgaprune.frontends.qkeras.reference import LayerValuesProbe
from fpgaprune.quantize import to_qkeras
from fpgaprune.quantize.profile import SAMPLE, Profile, ProfileCollector, ProfileRow
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

L = keras.layers
SPEC = {
    "default": {
        "kernel": "quantized_bits(6,0,alpha=1)",
        "bias": "quantized_bits(8,3,alpha=1)",
        "activation": "quantized_relu(6,2)",
    }
}


@pytest.mark.parametrize("seed", range(4))
def test_a_row_counts_exactly_over_chunks_and_keeps_a_bounded_sample(seed):
    rng = np.random.default_rng(seed)
    chunks = [rng.normal(0, 3, size=rng.integers(1, 30_000)) for _ in range(5)]
    row = ProfileRow("conv1", "pre-activation", "quantized_relu(6,2)", "after QAT", 0.0, 3.9375)
    for chunk in chunks:
        row.add(chunk)
    values = np.concatenate(chunks)
    assert row.count == values.size and row.below == np.sum(values < 0) and row.above == np.sum(values > 3.9375)
    assert row._sample.size <= SAMPLE
    row.finish()
    assert row.quantiles[0] == values.min() and row.quantiles[-1] == values.max()
    assert abs(row.quantiles[3] - np.median(values)) < 0.1  # the sample's median stands for the whole
    again = ProfileRow.from_json(row.to_json())
    assert again.clipped == row.clipped and again.quantiles == row.quantiles


def test_quantizer_ranges():
    from qkeras.quantizers import quantized_bits, quantized_relu

    from fpgaprune.frontends.qkeras.front_end import FRONT_END as QKERAS

    assert quantizer_range(quantized_relu(6, 2), QKERAS) == (0.0, 3.9375)
    assert quantizer_range(quantized_bits(6, 0, alpha=1), QKERAS) == (-1.0, 0.96875)
    assert quantizer_range(quantized_bits(8, 3, alpha=1), QKERAS) == (-8.0, 7.9375)


def _quantized_cnn():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            L.Conv2D(3, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(2, 3, activation="relu", name="conv2"),
            L.Flatten(name="flatten"),
            L.Dense(4, name="fc"),
        ]
    )
    return to_qkeras(fp.hold(model, prune=["conv2[:, :, 1, 0]"]), SPEC)


@pytest.mark.parametrize("scale", [1.0, 255.0])
def test_the_share_clipped_at_an_activation_quantizer_is_that_of_its_inputs_above_its_range(scale):
    quantized = _quantized_cnn()
    x = np.round(np.random.default_rng(1).random((64, 6, 6, 1)) * 16) / 16 * scale
    collector = ProfileCollector(resolved(quantized))
    values = LayerValuesProbe(quantized, batch_size=16)(x[:40])
    collector.add(x[:40], values)
    collector.add(x[40:], LayerValuesProbe(quantized)(x[40:]))
    profile = collector.profile()
    rows = {(row.layer, row.what): row for row in profile.rows}
    conv1 = keras.Model(quantized.input, quantized.get_layer("conv1").output).predict(x, verbose=0)
    assert rows["relu1", "pre-activation"].above == np.sum(conv1 > 3.9375)  # relu1's input is conv1's output
    assert rows["relu1", "pre-activation"].below == 0  # below 0 is the ReLU's function, not a clip
    conv2 = quantized.get_layer("conv2")
    saved = conv2.activation
    conv2.activation = keras.activations.linear
    linear = keras.Model(quantized.input, conv2.output).predict(x, verbose=0)
    conv2.activation = saved
    assert rows["conv2", "pre-activation"].above == np.sum(linear > 3.9375)  # the activation inside the layer
    kernel = np.asarray(quantized.get_layer("fc").kernel)
    assert rows["fc/kernel", "weights"].above == np.sum(kernel > 0.96875)
    over = profile.over(0.05)
    assert bool(over) == (scale > 1), [row.describe() for row in over]
    assert Profile.from_json(profile.to_json()).rows[0].count == profile.rows[0].count
