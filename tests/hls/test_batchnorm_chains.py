"""Batch normalizations that cannot fold, in the shape of hls4ml's Keras-2 jet-tagging CNN (a BatchNormalization
on the input, `Conv2D(activation="relu")`, a BatchNormalization after it, a Conv2D, a Dense), on wide float
inputs: the design computes what QKeras computes within the bound the derivation states at every layer (each BN's
own rounding, and a quantizer that may round a differing value one step the other way), in io_parallel and
io_stream, or, where that bound grows past 1/16 of what a layer's type can reach, C-sim fails there, naming the
layer and what to change: a bound that could not fail judges nothing."""

import numpy as np
import pytest
from hls_helpers import SPEC8, digits

import fpgaprune as fp
from fpgaprune.hls.tolerance import export_layer_tolerances
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

L = keras.layers


def jet_cnn(input_batchnorm: bool, middle_batchnorm: bool, seed: int = 0):
    """The jet tagger's layers at the size of 8x8 images, with the batch normalizations asked for."""
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((8, 8, 1))]
    layers += [L.BatchNormalization(name="bn_input")] if input_batchnorm else []
    layers += [L.Conv2D(5, 3, activation="relu", name="conv1"), L.Dropout(0.1, name="dropout1")]
    layers += [L.BatchNormalization(name="bn_middle")] if middle_batchnorm else []
    layers += [
        L.Conv2D(4, 3, activation="relu", name="conv2"),
        L.Flatten(name="flatten"),
        L.Dense(10, activation="relu", name="fc1"),
        L.Dense(10, name="logits"),
    ]
    return keras.Sequential(layers)


@pytest.fixture(scope="module")
def wide_digits():
    """Digits as a detector's energies: up to ~500, on no short grid (the input type takes 16 fraction bits)."""
    data = digits()
    rng = np.random.default_rng(0)
    scale = lambda x: (x * 31.3 * rng.uniform(0.9, 1.1, x.shape)).astype(np.float32)  # noqa: E731
    return scale(data.x_train), data.y_train, scale(data.x_test[:300]), data.y_test[:300]


# (input BN, middle BN, preset, the layer where the bound stops judging anything or None). Where a bound grows past
# 1/16 of what its layer's type can reach (the input BN's rounding, a ReLU quantizer's step, times fc1's column
# sums: 4.6 and 6.0 against fixed<15,6>'s 4), C-sim fails there, naming it: before issue 68 these passed "within
# the tolerance" of a bound that could not fail.
CASES = [(True, False, "latency_parallel", "fc1"), (False, True, "latency_stream", None)]
CASES += [(True, True, "latency_parallel", "fc1"), (True, True, "latency_stream", "fc1")]


_QUANTIZED: dict = {}  # (input BN, middle BN) -> the QAT-trained QKeras model, shared by the io types


def _quantized(wide_digits, input_batchnorm: bool, middle_batchnorm: bool):
    key = (input_batchnorm, middle_batchnorm)
    if key not in _QUANTIZED:
        x_train, y_train, _, _ = wide_digits
        model = jet_cnn(input_batchnorm, middle_batchnorm)
        model.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x_train, y_train, epochs=2, batch_size=64, verbose=0)  # moving statistics far from 0 and 1
        quantized = fp.to_qkeras(fp.prune(model, 0.3, structure="kernel", layers=["conv2"]), SPEC8)
        quantized.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        quantized.fit(x_train, y_train, epochs=1, batch_size=64, verbose=0)
        _QUANTIZED[key] = quantized
    return _QUANTIZED[key]


@pytest.mark.csim
@pytest.mark.parametrize("input_batchnorm,middle_batchnorm,preset,unbounded", CASES)
def test_unfoldable_batchnorms_are_within_the_stated_bound_or_named_where_no_bound_holds(
    wide_digits, tmp_path, input_batchnorm, middle_batchnorm, preset, unbounded
):
    from fpgaprune.hls.tolerance import Tolerance, Unbounded

    _, _, x_test, _ = wide_digits
    quantized = _quantized(wide_digits, input_batchnorm, middle_batchnorm)
    batchnorms = [name for name, kept in (("bn_input", input_batchnorm), ("bn_middle", middle_batchnorm)) if kept]
    assert all(type(quantized.get_layer(name)).__name__ == "QBatchNormalization" for name in batchnorms)
    exported = fp.export(quantized, preset, "pynq-z2", tmp_path / "prj", x=x_test)
    bounds = export_layer_tolerances(
        resolved(quantized), exported.config, exported.manifest.get("names"), exported.input_type
    )
    for name in batchnorms:
        assert isinstance(bounds[name], Tolerance) and "cannot fold" in bounds[name].reason, bounds[name]
    check = fp.csim(exported, quantized, x_test)
    if unbounded is None:
        assert "rounds inputs that differ" in bounds["logits"].reason  # a ReLU quantizer may round one step away
        assert check.passed and not check.beyond, check.format()
        return
    assert isinstance(bounds[unbounded], Unbounded) and "more than 1/16 of what its type" in bounds[unbounded].reason
    assert not check.passed and check.beyond.startswith(f"'{unbounded}' differs from QKeras"), check.format()
    assert "so it could not fail" in check.beyond and "normalize the data instead of 'bn_input'" in check.beyond
    assert all(line.split("'")[1] in ("bn_input", "bn_middle", "conv1", "conv2") for line in check.judged)
