"""Selections parse into the masks NumPy would select; every bad input is a one-line error that names the problem."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models import build

import fpgaprune as fp
from fpgaprune.record import record_of
from fpgaprune.selection import index_to_mask, parse_index, parse_selector, resolve
from fpgaprune.tfk import keras


def cnn():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((8, 8, 32)),
            keras.layers.Conv2D(32, 3, name="conv2"),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.SeparableConv2D(4, 3, name="sep"),
            keras.layers.Conv2D(4, 1, use_bias=False, name="conv3"),
            keras.layers.Flatten(),
            keras.layers.Dense(10, name="fc"),
        ],
        name="cnn",
    )


@pytest.mark.parametrize(
    "text, numpy_index",
    [
        ("[:, :, 29, 13]", np.s_[:, :, 29, 13]),
        ("[:, :, 29, :]", np.s_[:, :, 29, :]),
        ("[..., 13]", np.s_[..., 13]),
        ("[1, ..., 2:5]", np.s_[1, ..., 2:5]),
        ("[-1, ::2]", np.s_[-1, ::2]),
        ("[:, :, 3:30:4, -3]", np.s_[:, :, 3:30:4, -3]),
        ("[2]", np.s_[2]),
    ],
)
def test_index_strings_select_what_numpy_selects(text, numpy_index):
    shape = (3, 3, 32, 32)
    expected = np.zeros(shape, bool)
    expected[numpy_index] = True
    np.testing.assert_array_equal(index_to_mask(parse_index(text), shape), expected)


def test_lists_select_per_axis():
    mask = index_to_mask(parse_index("[:, :, [1, 5, 29], [13, 2]]"), (3, 3, 32, 32))
    expected = np.zeros((3, 3, 32, 32), bool)
    for ci in (1, 5, 29):
        for co in (13, 2):
            expected[:, :, ci, co] = True
    np.testing.assert_array_equal(mask, expected)
    assert mask.sum() == 9 * 6


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=4).flatmap(
        lambda shape: st.tuples(
            st.just(tuple(shape)),
            st.tuples(
                *[st.one_of(st.integers(-n, n - 1), st.tuples(st.integers(-n, n), st.integers(-n, n))) for n in shape]
            ),
        )
    )
)
def test_random_indices_match_numpy(case):
    shape, parts = case
    text_parts, numpy_parts = [], []
    for part in parts:
        if isinstance(part, tuple):
            text_parts.append(f"{part[0]}:{part[1]}")
            numpy_parts.append(slice(*part))
        else:
            text_parts.append(str(part))
            numpy_parts.append(part)
    expected = np.zeros(shape, bool)
    expected[tuple(numpy_parts)] = True
    text = "[" + ", ".join(text_parts) + "]"
    if expected.any():
        np.testing.assert_array_equal(index_to_mask(parse_index(text), shape), expected)
    else:
        with pytest.raises(ValueError, match="selects nothing"):
            index_to_mask(parse_index(text), shape)


def test_variable_paths_and_defaults():
    model = cnn()
    assert resolve(record_of(model), parse_selector("conv2/bias")).mask.shape == (32,)
    assert resolve(record_of(model), parse_selector("conv2[0, 0, 0, 0]")).weight.name == "kernel"
    assert resolve(record_of(model), parse_selector("sep/pointwise_kernel[..., 0]")).mask.sum() == 32
    lstm = build("LSTM")[0]
    assert resolve(record_of(lstm), parse_selector("layer/recurrent_kernel")).mask.shape == (4, 16)
    where = np.zeros((10,), bool)
    where[3] = True
    assert resolve(record_of(model), parse_selector("fc/bias", where=where)).mask.sum() == 1


BAD_SELECTIONS = [
    ("conv3x[0]", "no layer named 'conv3x' in model 'cnn'; close names: conv3, conv2"),
    ("conv2[:, :, 40, 13]", "conv2/kernel has shape (3, 3, 32, 32); index 40 is out of range for axis 2 of size 32"),
    ("conv2[:, :, 29", "selection 'conv2[:, :, 29' is malformed"),
    ("conv2[:, :, foo, 13]", "expected an integer, found 'foo'"),
    ("conv2[:, :, __import__('os'), 1]", "expected an integer"),
    ("conv2[1.5]", "expected an integer, found '1.5'"),
    ("conv2[0, 0, 0, 0, 0]", "5 indices for a 4-d variable"),
    ("conv2[..., ..., 1]", "more than one '...'"),
    ("conv2[:, :, 30:40]", "slice bound 40 is out of range for axis 2 of size 32"),
    ("conv2[:, :, 5:5]", "selects nothing"),
    ("conv2/kernal[0]", "layer 'conv2' (Conv2D) has no maskable variable 'kernal'; it has: kernel, bias"),
    ("bn[0]", "layer 'bn' is a BatchNormalization, which fpgaprune cannot mask"),
    ("sep[..., 0]", "layer 'sep' (SeparableConv2D) has several kernels; name one"),
    ("conv3/bias", "layer 'conv3' has no bias"),
    ("conv2 junk", "is malformed"),
]


@pytest.mark.parametrize("selection, message", BAD_SELECTIONS)
def test_bad_selections_give_one_line_errors_and_leave_weights(selection, message):
    model = cnn()
    before = [w.copy() for w in model.get_weights()]
    with pytest.raises(fp.FpgapruneError) as info:
        fp.hold(model, prune=[selection])
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


@pytest.mark.parametrize(
    "where, message",
    [
        (np.zeros((3, 3, 32, 31), bool), "the boolean array has bool (3, 3, 32, 31)"),
        (np.zeros((3, 3, 32, 32), np.int8), "the boolean array has int8"),
    ],
)
def test_bad_boolean_arrays(where, message):
    with pytest.raises(fp.SelectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fp.hold(cnn(), fp.MaskManifest().prune("conv2", where=where))


def test_freeze_value_of_wrong_shape_is_rejected():
    with pytest.raises(fp.ManifestError, match=r"value of shape \(2,\) fits neither"):
        fp.hold(cnn(), fp.MaskManifest().freeze("fc[3, :]", value=np.ones(2)))


def test_a_model_of_no_front_end_is_one_line():
    class JaxLikeModule:  # a model from a framework no front end reads
        pass

    with pytest.raises(
        fp.ModelTypeError,
        match=r"\.JaxLikeModule is not a tf_keras \+ QKeras or Keras 3( or PyTorch)? object; "
        r"fpgaprune takes Keras models \(Sequential or functional\) and PyTorch modules",
    ):
        fp.hold(JaxLikeModule(), prune=["fc[0, 0]"])


def test_unsupported_layer_names_its_class():
    model = keras.Sequential([keras.Input((4, 3)), keras.layers.SimpleRNN(2, name="rnn")])
    with pytest.raises(fp.UnsupportedLayerError, match="layer 'rnn' is a SimpleRNN"):
        fp.hold(model, prune=["rnn[0, 0]"])
