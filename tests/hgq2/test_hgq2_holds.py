"""Holds through HGQ2's QAT (the HGQ2 environment, docs/hgq2.md): a Keras 3 model's pruned entries stay exactly
0.0, in the weight and after its quantizer, and their bit widths stay 0, so that EBOPs count nothing for them;
a frozen entry keeps its value and its bits. Over HGQ2's Conv1D, Conv2D and Dense (twins of Keras layers), its
Conv3D and EinsumDense (HGQ2 models as they come), four optimizers (AdamW with weight decay, SGD with momentum,
RMSprop, Adam with EMA) and seeds."""

import numpy as np
import pytest

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")
import hgq.layers  # noqa: E402
import keras  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.framework import front_end_of  # noqa: E402
from fpgaprune.frontends.tensorflow.holds import hold_of  # noqa: E402

HGQ2 = {"hgq2": {"beta0": 1e-4}}
OPTIMIZERS = {
    "adamw": lambda: keras.optimizers.AdamW(5e-3, weight_decay=0.5),
    "sgd": lambda: keras.optimizers.SGD(5e-2, momentum=0.9),
    "rmsprop": lambda: keras.optimizers.RMSprop(5e-3),
    "adam_ema": lambda: keras.optimizers.Adam(5e-3, use_ema=True, ema_overwrite_frequency=3),
}
LAYERS = {  # Keras layers (their HGQ2 twins are trained), and HGQ2's own layers that the twin does not make
    "Conv1D": (lambda: keras.layers.Conv1D(6, 3, activation="relu", name="layer"), (10, 3), "layer[:, 1, 2]"),
    "Conv2D": (lambda: keras.layers.Conv2D(6, 3, activation="relu", name="layer"), (8, 8, 2), "layer[:, :, 1, 4]"),
    "Dense": (lambda: keras.layers.Dense(12, activation="relu", name="layer"), (20,), "layer[3:7, 5]"),
    "QConv3D": (
        lambda: hgq.layers.QConv3D(4, 3, activation="relu", beta0=1e-4, name="layer"),
        (5, 5, 5, 2),
        "layer[:, :, :, 1, 3]",
    ),
    "QEinsumDense": (
        lambda: hgq.layers.QEinsumDense(
            "ab,bc->ac", output_shape=12, bias_axes="c", activation="relu", beta0=1e-4, name="layer"
        ),
        (20,),
        "layer[3:7, 5]",
    ),
}


def _model(kind: str, seed: int):
    build, shape, selection = LAYERS[kind]
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input(shape), build(), keras.layers.Flatten(), keras.layers.Dense(4, name="out")])
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(256, *shape)).astype("float32")
    y = (x.reshape(len(x), -1).sum(1) > 0).astype("int32") + 2 * (x.reshape(len(x), -1)[:, 0] > 0)
    return model, x, y, selection


def _held(model):
    layer = model.get_layer("layer")
    mask, target = hold_of(layer.kernel).compiled(tuple(layer.kernel.shape))
    return layer, mask, target


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_weights_and_their_bits_stay_zero_through_hgq2_qat(kind, optimizer, seed):
    model, x, y, selection = _model(kind, seed)
    pruned = fp.prune(model, 0.4, layers=["layer"], selections=[selection])
    quantized = fp.quantized_twin(pruned, HGQ2)
    assert front_end_of(quantized).name == "Keras 3 + HGQ2"
    quantized.compile(OPTIMIZERS[optimizer](), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    quantized.fit(x, y, epochs=2, batch_size=32, verbose=0)
    layer, mask, target = _held(quantized)
    assert mask.sum() >= 0.3 * mask.size and not target[mask].any()  # 40% of whole kernels, rounded down
    kernel = np.asarray(layer.kernel)
    assert np.array_equal(kernel[mask], np.zeros(mask.sum(), np.float32))  # bit-exact 0.0, no -0.0 either
    assert not np.signbit(kernel[mask]).any()
    assert not np.asarray(layer.kq(layer.kernel, training=False))[mask].any()
    bits = np.broadcast_to(np.asarray(layer.kq.quantizer._b), kernel.shape)
    assert not bits[mask].any() and bits[~mask].min() > 0  # held at 0 bits; the free ones keep theirs
    assert np.abs(kernel[~mask]).max() > 0


def test_held_bits_take_the_pruned_weights_out_of_ebops():
    """EBOPs count a weight's bits, not its value: with the bits held, the pruned kernels cost nothing there."""
    model, x, y, selection = _model("Conv2D", 0)
    pruned = fp.prune(model, 0.5, layers=["layer"], selections=[selection])
    costs = {}
    for label, spec in (("held", HGQ2), ("free", HGQ2)):
        quantized = fp.quantized_twin(pruned, spec)
        if label == "free":  # the same twin with its bits released: what HGQ2 alone would count
            bits = quantized.get_layer("layer").kq.quantizer._b
            bits.constraint = None
            bits.assign(np.full(bits.shape, 8.0, np.float32))
        quantized.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        quantized.fit(x, y, epochs=1, batch_size=32, verbose=0)
        costs[label] = front_end_of(quantized).ebops(quantized)["layer"]
        if label == "held":
            layer, mask, _ = _held(quantized)
            share = mask.mean()
    assert costs["held"] < costs["free"] * (1 - 0.8 * share)


def test_a_frozen_weight_keeps_its_value_and_its_bits(recwarn):
    model, x, y, _ = _model("Dense", 0)
    kernel = np.asarray(model.get_layer("layer").kernel).copy()
    kernel[0, 0], kernel[1, 1] = 0.25, 0.3  # 0.25 is on the initial bits' grid (6 fraction bits), 0.3 is not
    model.get_layer("layer").kernel.assign(kernel)
    held = fp.hold(model, freeze=["layer[0, 0]", "layer[1, 1]"])
    quantized = fp.quantized_twin(held, HGQ2)
    warned = [str(w.message) for w in recwarn if "not representable" in str(w.message)]
    assert len(warned) == 1 and "layer/kernel[1, 1]" in warned[0] and "layer/kernel[0, 0]" not in warned[0]
    before = np.asarray(quantized.get_layer("layer").kq(quantized.get_layer("layer").kernel, training=False))
    quantized.compile(keras.optimizers.AdamW(5e-3, weight_decay=0.5), keras.losses.MeanSquaredError())
    quantized.fit(x, np.zeros((len(x), 4), "float32"), epochs=2, batch_size=32, verbose=0)
    layer = quantized.get_layer("layer")
    kernel, after = np.asarray(layer.kernel), np.asarray(layer.kq(layer.kernel, training=False))
    assert kernel[0, 0] == np.float32(0.25) and kernel[1, 1] == np.float32(0.3)
    assert after[0, 0] == 0.25 and after[1, 1] == before[1, 1]  # the quantized value cannot move either


def test_saved_and_loaded_the_holds_and_their_bits_come_back(tmp_path):
    model, x, y, selection = _model("Conv2D", 0)
    quantized = fp.quantized_twin(fp.prune(model, 0.5, layers=["layer"], selections=[selection]), HGQ2)
    fp.save_model(quantized, tmp_path / "q.keras")
    loaded = fp.load_model(tmp_path / "q.keras")
    layer, mask, _ = _held(loaded)
    assert hold_of(layer.kq.quantizer._b) is not None
    loaded.compile(keras.optimizers.Adam(5e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    loaded.fit(x, y, epochs=1, batch_size=32, verbose=0)
    assert not np.asarray(layer.kernel)[mask].any()
    assert not np.broadcast_to(np.asarray(layer.kq.quantizer._b), mask.shape)[mask].any()


def test_hgq2_binds_the_kinds_qkeras_has_no_layer_for():
    """Conv3D and EinsumDense: HGQ2's classes have the weights, constraint slots and quantizers the table names."""
    from fpgaprune.model.layer_kinds import BY_NAME, kind_of
    from fpgaprune.selection import maskable_weights

    for name in ("Conv3D", "EinsumDense"):
        build, shape, _ = LAYERS[f"Q{name}"]
        model = keras.Sequential([keras.Input(shape), build()])
        layer = model.get_layer("layer")
        assert kind_of(layer) is BY_NAME[name] and maskable_weights(layer) == BY_NAME[name].weights
        for weight in BY_NAME[name].weights:
            assert weight.variable(layer) is not None and weight.constraint_key in layer.get_config(), weight
            assert front_end_of(layer).weight_quantizer(layer, weight.role) is not None, weight
        assert not BY_NAME[name].kernel_sparse
