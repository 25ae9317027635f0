"""Held entries stay bit-exact through training; free entries follow the re-assign-after-every-step reference.
The same properties for each front end: tf_keras (and QKeras) models with tf_keras' optimizers, Keras 3 models
with Keras 3's (weight decay, gradient accumulation, and an EMA copied into the weights at the end of `fit`)."""

import numpy as np
import pytest
import tensorflow as tf
from models import FRONT_ENDS, build

import fpgaprune as fp
from fpgaprune.model.layer_kinds import attribute_of
from fpgaprune.selection import maskable_weights

EPOCHS, BATCH = 3, 8  # 12 optimizer steps


def random_holds(model, rng):
    """A mixed manifest over every maskable variable of 'layer' and the head kernel, plus the oracle targets."""
    manifest = fp.MaskManifest()
    oracle = {}
    layer = model.get_layer("layer")
    paths = [("layer", w) for w in maskable_weights(type(layer).__name__)] + [
        ("head", w) for w in maskable_weights("Dense")[:1]
    ]
    for layer_name, weight in paths:
        variable = variable_of(model, f"{layer_name}/{weight.name}")
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
    return getattr(getattr(layer, "cell", layer), attribute_of(layer, weight_name))


def reassign(model, oracle):
    for path, (mask, target) in oracle.items():
        variable = variable_of(model, path)
        value = variable.numpy()
        value[mask] = target[mask]
        variable.assign(value)


def reassigning(k, oracle):
    """The reference mechanism, a callback of Keras module `k`: put the held entries back after every step."""

    class Reassign(k.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            reassign(self.model, oracle)

    return Reassign()


def setup(kind, seed, front_end="tf_keras"):
    model, x, y = build(kind, seed, front_end)
    manifest, oracle = random_holds(model, np.random.default_rng(seed + 100))
    held = fp.hold(model, manifest)
    reference = FRONT_ENDS[front_end][0].models.clone_model(model)
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


# tf_keras: every kind with every optimizer (the EMA on some). Keras 3: every optimizer on three kinds, and every
# kind with the EMA (a Keras 3 fit costs about 2 s here).
EMA_KINDS = ("Conv2D", "Dense", "LSTM", "QConv2D", "QDense", "QLSTM")
CASES = [
    ("tf_keras", kind, optimizer)
    for kind in sorted(FRONT_ENDS["tf_keras"][1])
    for optimizer in sorted(FRONT_ENDS["tf_keras"][2])
    if optimizer != "Adam-EMA" or kind in EMA_KINDS
]
CASES += [
    ("keras3", kind, optimizer)
    for kind in sorted(FRONT_ENDS["keras3"][1])
    for optimizer in sorted(FRONT_ENDS["keras3"][2])
    if kind in ("Conv2D", "Dense", "LSTM") or optimizer == "Adam-EMA"
]


@pytest.mark.parametrize("front_end,kind,optimizer", CASES)
def test_fit_holds_exactly_and_matches_reassign_reference(front_end, kind, optimizer):
    k, builders, optimizers, loss = FRONT_ENDS[front_end]
    seed = sorted(builders).index(kind) * 10 + sorted(optimizers).index(optimizer)
    held, reference, oracle, x, y = setup(kind, seed, front_end)
    initial = held.get_weights()
    held.compile(optimizers[optimizer](), loss)
    reference.compile(optimizers[optimizer](), loss)
    held.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    reference.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[reassigning(k, oracle)])
    reassign(reference, oracle)  # after an EMA copy at the end of `fit`, which no callback sees
    assert_held_exact_and_free_match(held, reference, oracle, initial)


def tape_train(model, optimizer, x, y, loss_fn, oracle=None):
    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True)) + tf.add_n(model.losses or [tf.constant(0.0)])
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    for _ in range(EPOCHS):
        for start in range(0, len(x), BATCH):
            step(x[start : start + BATCH], y[start : start + BATCH])
            if oracle is not None:
                reassign(model, oracle)


TAPE_OPTIMIZERS = ("SGD-momentum", "Adam", "AdamW", "RMSprop", "Adagrad", "legacy-Adam")
TAPE_CASES = [
    ("tf_keras", kind, optimizer, seed)
    for kind in ("Conv2D", "LSTM", "QDense")
    for optimizer in TAPE_OPTIMIZERS
    for seed in (1, 2)
]
TAPE_CASES += [("keras3", kind, optimizer, 1) for kind in ("Conv2D", "LSTM") for optimizer in ("AdamW", "SGD-momentum")]


@pytest.mark.parametrize("front_end,kind,optimizer,seed", TAPE_CASES)
def test_gradient_tape_loop_holds_exactly(front_end, kind, optimizer, seed):
    _, _, optimizers, loss = FRONT_ENDS[front_end]
    held, reference, oracle, x, y = setup(kind, seed, front_end)
    initial = held.get_weights()
    tape_train(held, optimizers[optimizer](), x, y, loss)
    tape_train(reference, optimizers[optimizer](), x, y, loss, oracle)
    assert_held_exact_and_free_match(held, reference, oracle, initial)


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_user_model_is_not_modified(front_end):
    _, _, optimizers, loss = FRONT_ENDS[front_end]
    model, x, y = build("Conv2D", front_end=front_end)
    before = [w.copy() for w in model.get_weights()]
    held = fp.hold(model, prune=["layer[..., 0]"])
    held.compile(optimizers["Adam"](), loss)
    held.fit(x, y, epochs=1, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert model.get_layer("layer").kernel.constraint is None
