"""Held entries stay bit-exact through training; free entries follow the re-assign-after-every-step reference."""

import numpy as np
import pytest
import tensorflow as tf

import fpgaprune as fp
from fpgaprune.selection import maskable_weights
from fpgaprune.tfk import keras

from models import BUILDERS, LOSS, OPTIMIZERS, build

EPOCHS, BATCH = 3, 8  # 12 optimizer steps


def random_holds(model, rng):
    """A mixed manifest over every maskable variable of 'layer' and the head kernel, plus the oracle targets."""
    manifest = fp.MaskManifest()
    oracle = {}
    layer = model.get_layer("layer")
    paths = [("layer", w) for w in maskable_weights(type(layer).__name__)] + [("head", w) for w in
                                                                              maskable_weights("Dense")[:1]]
    for layer_name, weight in paths:
        variable = getattr(model.get_layer(layer_name), "cell", model.get_layer(layer_name))
        variable = getattr(variable, weight.name)
        current = variable.numpy()
        pruned = rng.random(current.shape) < 0.35
        frozen = rng.random(current.shape) < 0.2
        target = current.copy()
        target[pruned] = 0.0
        path = f"{layer_name}/{weight.name}"
        manifest.prune(path, where=pruned)
        if rng.random() < 0.5:  # freeze at the current value
            manifest.freeze(path, where=frozen)
            target[frozen] = current[frozen]
        else:  # freeze at given values
            values = rng.normal(size=current.shape).astype(np.float32)
            manifest.freeze(path, value=values, where=frozen)
            target[frozen] = values[frozen]
        oracle[path] = (pruned | frozen, target)
    return manifest, oracle


def variable_of(model, path):
    layer_name, weight_name = path.split("/")
    layer = model.get_layer(layer_name)
    return getattr(getattr(layer, "cell", layer), weight_name)


def reassign(model, oracle):
    for path, (mask, target) in oracle.items():
        variable = variable_of(model, path)
        value = variable.numpy()
        value[mask] = target[mask]
        variable.assign(value)


class Reassign(keras.callbacks.Callback):
    """The reference mechanism: put the held entries back after every optimizer step."""

    def __init__(self, oracle):
        super().__init__()
        self.oracle = oracle

    def on_train_batch_end(self, batch, logs=None):
        reassign(self.model, self.oracle)


def setup(kind, seed):
    model, x, y = build(kind, seed)
    manifest, oracle = random_holds(model, np.random.default_rng(seed + 100))
    held = fp.hold(model, manifest)
    reference = keras.models.clone_model(model)
    reference.set_weights(held.get_weights())
    return held, reference, oracle, x, y


def assert_held_exact_and_free_match(held, reference, oracle, initial):
    for path, (mask, target) in oracle.items():
        value = variable_of(held, path).numpy()
        drifted = np.count_nonzero(value[mask].view(np.uint32) != target[mask].view(np.uint32))
        assert drifted == 0, f"{path}: {drifted} held entries drifted"
        np.testing.assert_allclose(value[~mask], variable_of(reference, path).numpy()[~mask], rtol=0, atol=1e-6)
    for ours, theirs in zip(held.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    moved = sum(np.count_nonzero(a != b) for a, b in zip(held.get_weights(), initial))
    assert moved > 0, "nothing trained"


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_fit_holds_exactly_and_matches_reassign_reference(kind, optimizer):
    seed = sorted(BUILDERS).index(kind) * 10 + sorted(OPTIMIZERS).index(optimizer)
    held, reference, oracle, x, y = setup(kind, seed)
    initial = held.get_weights()
    held.compile(OPTIMIZERS[optimizer](), LOSS)
    reference.compile(OPTIMIZERS[optimizer](), LOSS)
    held.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    reference.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[Reassign(oracle)])
    assert_held_exact_and_free_match(held, reference, oracle, initial)


def tape_train(model, optimizer, x, y, oracle=None):
    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = LOSS(yb, model(xb, training=True)) + tf.add_n(model.losses or [tf.constant(0.0)])
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    for _ in range(EPOCHS):
        for start in range(0, len(x), BATCH):
            step(x[start:start + BATCH], y[start:start + BATCH])
            if oracle is not None:
                reassign(model, oracle)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", ["Conv2D", "LSTM", "QDense"])
def test_gradient_tape_loop_holds_exactly(kind, optimizer, seed):
    held, reference, oracle, x, y = setup(kind, seed)
    initial = held.get_weights()
    tape_train(held, OPTIMIZERS[optimizer](), x, y)
    tape_train(reference, OPTIMIZERS[optimizer](), x, y, oracle)
    assert_held_exact_and_free_match(held, reference, oracle, initial)


def test_user_model_is_not_modified():
    model, x, y = build("Conv2D")
    before = [w.copy() for w in model.get_weights()]
    held = fp.hold(model, prune=["layer[..., 0]"])
    held.compile(OPTIMIZERS["Adam"](), LOSS)
    held.fit(x, y, epochs=1, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert model.get_layer("layer").kernel.constraint is None
