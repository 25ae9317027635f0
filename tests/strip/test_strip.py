"""strip(): same outputs (1e-5) with fewer parameters; dead channels folded exactly or kept; unsafe graphs refused."""

import numpy as np
import pytest

import fpgaprune as fp
from fpgaprune.strip import StripError, strip
from fpgaprune.tfk import keras

L = keras.layers


def randomise(model, seed=0):
    """Nonzero biases and non-trivial BatchNormalization statistics, so folded constants are not zero."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            c = layer.gamma.shape[0]
            layer.set_weights(
                [rng.uniform(0.5, 1.5, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 1.5, c)]
            )
        elif getattr(layer, "use_bias", False):
            layer.bias.assign(rng.normal(size=layer.bias.shape).astype(np.float32))
    return model


def assert_equivalent(original, result, seed=0):
    x = np.random.default_rng(seed).random((16,) + tuple(original.input_shape[1:]), dtype=np.float32)
    np.testing.assert_allclose(result.model.predict(x, verbose=0), original.predict(x, verbose=0), atol=1e-5, rtol=0)
    assert result.model.count_params() < original.count_params()


def seq_cnn(padding="valid", batch_norm=True):
    keras.utils.set_random_seed(0)
    body = [keras.Input((9, 9, 3)), L.Conv2D(6, 3, padding=padding, name="c1")]
    body += [L.BatchNormalization(name="bn1")] if batch_norm else []
    body += [
        L.ReLU(),
        L.Conv2D(5, 3, padding=padding, name="c2"),
        L.Activation("tanh"),
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dense(4, name="fc"),
    ]
    return randomise(keras.Sequential(body, name="seq"))


def test_sequential_cnn_with_batchnorm_folds_constants():
    model = seq_cnn()
    held = fp.hold(model, prune=["c1[..., 1]", "c1[..., 4]", "c2[:, :, 0, :]", "c2[..., 2]", "c2[:, :, 3, 1]"])
    result = strip(held)
    assert_equivalent(held, result)
    assert list(result.index_map["c1"]["out"]) == [2, 3, 5]  # 1, 4 dead (folded); 0 unused by c2
    assert list(result.index_map["bn1"]["out"]) == [2, 3, 5]
    assert list(result.index_map["c2"]["in"]) == [2, 3, 5] and list(result.index_map["c2"]["out"]) == [0, 1, 3, 4]
    assert result.removed["c1"][0] == "unused by its consumers"
    assert result.removed["c1"][1].startswith("constant") and "c2" in result.removed["c1"][1]
    assert "fc" in result.removed["c2"][2]
    assert result.model.get_layer("c2").kernel.shape == (3, 3, 3, 4)
    assert [type(l).__name__ for l in result.model.layers] == [type(l).__name__ for l in model.layers]


def test_index_map_names_the_same_kernels():
    model = seq_cnn()
    held = fp.hold(model, prune=["c1[..., 1]", "c2[..., 2]"])
    result = strip(held)
    before = held.get_layer("c2").kernel.numpy()
    after = result.model.get_layer("c2").kernel.numpy()
    for ci in range(6):
        for co in range(5):
            new_ci, new_co = result.new_index("c2", "in", ci), result.new_index("c2", "out", co)
            if new_ci is None or new_co is None:
                assert ci == 1 or co == 2
            else:
                np.testing.assert_array_equal(after[:, :, new_ci, new_co], before[:, :, ci, co])


def test_surviving_holds_stay_held_on_the_stripped_model():
    held = fp.hold(seq_cnn(), prune=["c1[..., 1]", "c2[:, :, 3, 4]"], freeze=["fc[0, :]"])
    result = strip(held)
    stripped = result.model
    ci, co = result.new_index("c2", "in", 3), result.new_index("c2", "out", 4)
    stripped.compile(keras.optimizers.Adam(1e-2), "mse")
    rng = np.random.default_rng(1)
    stripped.fit(rng.random((32, 9, 9, 3)), rng.random((32, 4)), epochs=2, verbose=0)
    assert np.count_nonzero(stripped.get_layer("c2").kernel.numpy()[:, :, ci, co]) == 0
    np.testing.assert_array_equal(stripped.get_layer("fc").kernel.numpy()[0], held.get_layer("fc").kernel.numpy()[0])


def test_same_padding_keeps_nonzero_constants_and_removes_zero_ones():
    model = seq_cnn(padding="same", batch_norm=False)
    bias = model.get_layer("c1").bias.numpy()
    bias[1], bias[4] = 0.7, -0.3  # ReLU: channel 1 is the constant 0.7, channel 4 the constant 0
    model.get_layer("c1").bias.assign(bias)
    held = fp.hold(model, prune=["c1[..., 1]", "c1[..., 4]"])
    result = strip(held)
    assert_equivalent(held, result)
    assert 1 in result.index_map["c1"]["out"] and 4 not in result.index_map["c1"]["out"]
    assert any("c1 channel 1 is constant" in note and "'same' padding" in note for note in result.notes)


def test_cascade_removes_a_channel_that_dies_after_folding():
    model = seq_cnn()
    kernel = model.get_layer("c2").kernel.numpy()
    kernel[:, :, [0, 2, 3, 4, 5], 3] = 0  # c2 filter 3 reads only c1 channel 1, which is pruned
    model.get_layer("c2").kernel.assign(kernel)
    held = fp.hold(model, prune=["c1[..., 1]"])
    result = strip(held)
    assert_equivalent(held, result)
    assert 3 not in result.index_map["c2"]["out"]


def test_conv1d_global_pooling_and_dense_mlp():
    keras.utils.set_random_seed(2)
    conv1d = randomise(
        keras.Sequential(
            [
                keras.Input((12, 4)),
                L.Conv1D(6, 3, name="c"),
                L.BatchNormalization(),
                L.ReLU(),
                L.SpatialDropout1D(0.1),
                L.GlobalAveragePooling1D(),
                L.Dense(8, activation="relu", name="d1"),
                L.GaussianNoise(0.1),
                L.Dropout(0.2),
                L.Dense(3, name="d2"),
            ]
        )
    )  # channels pass through the training-only layers
    held = fp.hold(conv1d, prune=["c[..., 2]", "d1[:, 5]", "d1[3, :]"])
    result = strip(held)
    assert_equivalent(held, result)
    assert list(result.index_map["c"]["out"]) == [0, 1, 4, 5] and list(result.index_map["d1"]["out"]) == [
        0,
        1,
        2,
        3,
        4,
        6,
        7,
    ]


def branchy():
    keras.utils.set_random_seed(3)
    inputs = keras.Input((8, 8, 2))
    trunk = L.ReLU(name="r")(L.Conv2D(5, 3, name="trunk")(inputs))
    a = L.Conv2D(3, 3, name="a")(trunk)
    b = L.Conv2D(3, 3, name="b")(trunk)
    joined = L.Concatenate(name="cat")([a, b])
    out = L.Dense(2, name="fc")(L.Flatten()(joined))
    return randomise(keras.Model(inputs, out, name="branchy"))


def test_functional_branch_needs_every_consumer_to_agree():
    held = fp.hold(branchy(), prune=["a[:, :, 2, :]", "a[:, :, 3, :]", "b[:, :, 3, :]", "trunk[..., 0]"])
    result = strip(held)
    assert_equivalent(held, result)
    kept = list(result.index_map["trunk"]["out"])
    assert 3 not in kept  # unused by both a and b
    assert 2 in kept  # b still reads it
    assert 0 not in kept  # dead: folded into both a and b (valid padding)
    assert list(result.index_map["a"]["out"]) == [0, 1, 2]  # a feeds Concatenate: left whole


def residual(disagree=True):
    keras.utils.set_random_seed(4)
    inputs = keras.Input((8, 8, 3))
    a = L.Conv2D(4, 3, padding="same", name="a")(inputs)
    b = L.Conv2D(4, 1, name="b")(inputs)
    out = L.Dense(2, name="fc")(L.Flatten()(L.Add(name="add")([L.ReLU()(a), b])))
    return keras.Model(inputs, out)


def test_residual_add_with_disagreeing_branches_is_refused():
    model = residual()
    held = fp.hold(model, prune=["a[..., 1]"])
    before = [w.copy() for w in held.get_weights()]
    with pytest.raises(StripError, match="Add layer 'add' joins branches whose pruned channels disagree"):
        strip(held)
    assert all(np.array_equal(x, y) for x, y in zip(before, held.get_weights()))
    kept = strip(held, on_unsafe="keep")
    assert any("disagree" in note for note in kept.notes)
    assert kept.model.get_layer("a").kernel.shape == (3, 3, 3, 4)


def test_user_model_is_not_modified():
    model = seq_cnn()
    held = fp.hold(model, prune=["c1[..., 1]"])
    snapshot = [w.copy() for w in held.get_weights()]
    strip(held)
    assert all(np.array_equal(x, y) for x, y in zip(snapshot, held.get_weights()))
    assert held.get_layer("c1").kernel.shape == (3, 3, 3, 6)
