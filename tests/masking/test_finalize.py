"""finalize() hands downstream a plain model: same names, classes and weight order, held values baked in."""

import numpy as np
from models import LOSS, OPTIMIZERS, build

import fpgaprune as fp
from fpgaprune.tfk import keras


def test_finalize_returns_plain_model_and_manifest():
    model, x, y = build("QConv2D")
    held = fp.hold(model, prune=["layer[:, :, 0, 1]", "layer/bias[3]"], freeze=["head[2, :]"])
    held.compile(OPTIMIZERS["Adam"](), LOSS)
    held.fit(x, y, epochs=2, verbose=0)
    plain, manifest = fp.finalize(held)
    assert [(l.name, type(l)) for l in plain.layers] == [(l.name, type(l)) for l in model.layers]
    assert [w.name for w in plain.weights] == [w.name for w in model.weights]
    for ours, theirs in zip(plain.get_weights(), held.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    kernel = plain.get_layer("layer").kernel
    assert type(kernel.constraint).__name__ == "Clip"  # QKeras' own constraint is back
    assert not any(isinstance(v.constraint, fp.HoldConstraint) for v in plain.weights)
    assert np.count_nonzero(kernel.numpy()[:, :, 0, 1]) == 0
    assert [e.selection for e in manifest] == ["layer/kernel[:, :, 0, 1]", "layer/bias[3]", "head/kernel[2, :]"]
    np.testing.assert_array_equal(plain.predict(x, verbose=0), held.predict(x, verbose=0))


def test_user_constraint_is_kept_and_applied_before_the_hold():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(4, kernel_constraint=keras.constraints.NonNeg(), name="fc")]
    )
    held = fp.hold(model, fp.MaskManifest().freeze("fc[0, :]", value=-0.5))
    held.compile(OPTIMIZERS["SGD-momentum"](), "mse")
    held.fit(np.random.rand(16, 5), np.random.rand(16, 4) - 2.0, epochs=3, verbose=0)
    kernel = held.get_layer("fc").kernel.numpy()
    np.testing.assert_array_equal(kernel[0], np.float32(-0.5))
    assert (kernel[1:] >= 0).all()
    plain, _ = fp.finalize(held)
    assert isinstance(plain.get_layer("fc").kernel.constraint, keras.constraints.NonNeg)


def test_holds_compose_across_calls_and_later_entries_win():
    model, x, y = build("Dense")
    first = fp.hold(model, prune=["layer[0, :]"])
    second = fp.hold(first, fp.MaskManifest().freeze("layer[:, 0]", value=1.0).prune("layer/bias"))
    kernel = second.get_layer("layer").kernel.numpy()
    assert kernel[0, 0] == 1.0 and np.count_nonzero(kernel[0, 1:]) == 0
    assert (kernel[:, 0] == 1.0).all()
    assert len(fp.manifest_of(second)) == 3
    second.compile(OPTIMIZERS["RMSprop"](), LOSS)
    second.fit(x, y, epochs=2, verbose=0)
    kernel = second.get_layer("layer").kernel.numpy()
    assert (kernel[:, 0] == 1.0).all() and np.count_nonzero(kernel[0, 1:]) == 0
    assert np.count_nonzero(second.get_layer("layer").bias.numpy()) == 0


def test_set_weights_keeps_holds_and_enforce_restores_an_unguarded_write():
    model, _, _ = build("Conv2D")
    held = fp.hold(model, prune=["layer[..., 0]"])
    held.set_weights(model.get_weights())  # `assign` is guarded: the held entries stay 0
    kernel = held.get_layer("layer").kernel
    assert np.count_nonzero(kernel.numpy()[..., 0]) == 0
    assert np.count_nonzero(kernel.numpy()[..., 1]) > 0
    kernel.assign_add(np.ones(kernel.shape, np.float32))  # not guarded
    assert np.count_nonzero(kernel.numpy()[..., 0]) > 0
    fp.enforce(held)
    assert np.count_nonzero(kernel.numpy()[..., 0]) == 0


def test_functional_model_with_a_branch():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6, 6, 2))
    a = keras.layers.Conv2D(3, 3, name="a")(inputs)
    b = keras.layers.Conv2D(3, 3, name="b")(inputs)
    out = keras.layers.Dense(2, name="fc")(keras.layers.Flatten()(keras.layers.Add()([a, b])))
    model = keras.Model(inputs, out)
    held = fp.hold(model, prune=["a[..., 1]", "b[:, :, 0, :]"])
    assert [l.name for l in held.layers] == [l.name for l in model.layers]
    held.compile(OPTIMIZERS["Adam"](), "mse")
    held.fit(np.random.rand(8, 6, 6, 2), np.random.rand(8, 2), epochs=2, verbose=0)
    assert np.count_nonzero(held.get_layer("a").kernel.numpy()[..., 1]) == 0
    assert np.count_nonzero(held.get_layer("b").kernel.numpy()[:, :, 0, :]) == 0
