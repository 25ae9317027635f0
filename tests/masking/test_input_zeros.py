"""A model's own exact zeros (pruned elsewhere) are held at 0 as pruned entries, by rules stated in
`masking/input_zeros.py`: kernels only, at least 5% of a weight, and only where the quantizer keeps 0."""

import numpy as np
import qkeras

import fpgaprune as fp
from fpgaprune.masking.input_zeros import MIN_SHARE, input_zeros
from fpgaprune.tfk import keras

L = keras.layers


def _model(quantizer="quantized_bits(6,0,alpha=1)"):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            L.Dense(8, name="half"),
            L.Dense(8, name="chance"),
            qkeras.QDense(4, kernel_quantizer=quantizer, bias_quantizer="quantized_bits(8,3)", name="q"),
        ]
    )
    half, chance, q = (model.get_layer(name) for name in ("half", "chance", "q"))
    kernel, bias = half.get_weights()
    kernel[:, :4] = 0.0  # 50%: pruned elsewhere
    half.set_weights([kernel, np.zeros_like(bias)])  # zero biases: their initializer's, left free
    kernel, bias = chance.get_weights()
    kernel[5, 1] = 0.0  # 1 of 64: chance (half's unit 5 and q's row 1 alive: it trains)
    chance.set_weights([kernel, bias])
    kernel, bias = q.get_weights()
    kernel[::2] = 0.0  # 50%
    q.set_weights([kernel, bias])
    return model


def test_kernels_pruned_elsewhere_are_held_and_chance_zeros_and_biases_stay_free():
    model = _model()
    manifest, found = input_zeros(model)
    assert found.held == {("half", "kernel"): (64, 128), ("q", "kernel"): (16, 32)}
    assert list(found.left) == [("chance", "kernel")] and f"under {MIN_SHARE:.0%}" in found.left[("chance", "kernel")]
    held = fp.hold(model, manifest)
    x = np.random.default_rng(0).normal(size=(64, 16)).astype("float32")
    held.compile(keras.optimizers.AdamW(1e-2, weight_decay=0.5), "mse")
    held.fit(x, np.ones((64, 4)), epochs=3, verbose=0)
    assert np.all(held.get_layer("half").kernel.numpy()[:, :4] == 0.0)  # exact, through AdamW's decay
    assert np.all(held.get_layer("q").kernel.numpy()[::2] == 0.0)
    assert held.get_layer("chance").kernel.numpy()[5, 1] != 0.0  # free, and trained
    line = found.line()
    assert line.startswith("the model's own zeros: 80 exact zeros held at 0 as pruned (half/kernel 50%, q/kernel 50%)")
    assert "left free: chance/kernel (1 zeros, 1.6%: under 5%, by chance)" in line


def test_a_quantizer_that_cannot_hold_zero_leaves_its_zeros_free_and_says_so():
    manifest, found = input_zeros(_model("quantized_po2(4)"))
    assert ("q", "kernel") not in found.held and "maps 0 to 0.0625" in found.left[("q", "kernel")]
    fp.hold(_model("quantized_po2(4)"), manifest)  # no QuantizerZeroError: nothing held there


def test_variables_that_carry_holds_keep_them_and_a_model_without_zeros_finds_none():
    held = fp.hold(_model(), prune=["half[:, 4]"])
    _, found = input_zeros(held)
    assert ("half", "kernel") not in found.held  # fpgaprune's own holds already keep them
    keras.utils.set_random_seed(0)
    plain = keras.Sequential([keras.Input((4,)), L.Dense(3, name="fc")])
    manifest, found = input_zeros(plain)
    assert len(manifest) == 0 and found.line() == ""
