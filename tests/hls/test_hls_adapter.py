"""The Keras-2 routing adapter: tf_keras/QKeras models reach hls4ml's Keras-2 converter; C-sim matches QKeras."""

import sys

import numpy as np
import pytest
from hls_helpers import SPEC8

import fpgaprune as fp
from fpgaprune import data
from fpgaprune.hls import config_from_model, convert_model
from fpgaprune.hls.precision import derive_precisions
from fpgaprune.quantize import input_type, quantization_report, to_qkeras
from fpgaprune.record import record_of, resolved
from fpgaprune.tfk import keras

L = keras.layers
SPEC = SPEC8


def assert_csim_bit_exact(hls_model, quantized, x):
    hls_model.compile()
    x = np.ascontiguousarray(x)
    reference = quantized.predict(x, verbose=0)
    csim = np.asarray(hls_model.predict(x)).reshape(reference.shape)
    assert np.array_equal(csim, reference), f"max |diff| {np.abs(csim - reference).max()}"


def trained_qkeras_cnn(spec=SPEC, prune=("conv2[:, :, 1, :]", "conv2[:, :, 3, 2]"), epochs=4):
    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.Conv2D(6, 3, padding="same", activation="relu", name="conv2"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )
    quantized = to_qkeras(fp.hold(model, prune=list(prune)), spec)
    quantized.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    quantized.fit(dataset.x_train, dataset.y_train, epochs=epochs, verbose=0)
    return quantized, dataset


def test_config_routes_to_the_keras2_parser_and_restores_keras():
    import keras as keras3

    quantized, _ = trained_qkeras_cnn()
    config = config_from_model(resolved(quantized))
    assert {"conv1", "relu1", "conv2", "fc"} <= set(config["LayerName"])
    assert config["LayerName"]["conv1"]["Precision"]["weight"].startswith("fixed<6,1")
    assert sys.modules["keras"] is keras3 and keras3.__version__.startswith("3.")
    # a Keras 3 model goes through its tf_keras twin, with its own layer names
    config = config_from_model(
        resolved(keras3.Sequential([keras3.Input((3,)), keras3.layers.Dense(2, name="k3_dense")]))
    )
    assert "k3_dense" in config["LayerName"]
    assert sys.modules["keras"] is keras3


def test_csim_with_derived_precisions_is_bit_exact(tmp_path):
    quantized, dataset = trained_qkeras_cnn()
    plan = derive_precisions(record_of(quantized), input_type(dataset.x_train))
    config = config_from_model(resolved(quantized))
    for name, layer_config in plan.hls_layer_config().items():
        config["LayerName"].setdefault(name, {}).setdefault("Precision", {}).update(layer_config["Precision"])
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    assert_csim_bit_exact(hls_model, quantized, dataset.x_test[:200])
    report = quantization_report(quantized, None, dataset.x_test, dataset.y_test)
    conv2 = next(r for r in report.rows if r["layer"] == "conv2" and r["weight"] == "kernel")
    assert conv2["pruned"] == 9 * 6 + 9 and conv2["entries"] == 9 * 4 * 6
    assert conv2["pruned"] + conv2["quantized_to_zero"] + conv2["nonzero"] == conv2["entries"]
    assert report.quantized_score > 0.85 and "accuracy: float" not in report.format()


def test_dead_channel_with_auto_alpha_exports_without_nan(tmp_path):
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), L.Dense(4, name="fc")])
    auto = {"default": {"kernel": "quantized_bits(4,0,alpha='auto')", "bias": "quantized_bits(8,3,alpha=1)"}}
    quantized = to_qkeras(fp.hold(model, prune=["fc[:, 2]"]), auto)
    quantized.get_layer("fc").kernel_quantizer_internal(quantized.get_layer("fc").kernel)
    assert float(np.asarray(quantized.get_layer("fc").kernel_quantizer_internal.scale).ravel()[2]) == 0.0  # the trap
    x = np.random.default_rng(0).random((32, 6), dtype=np.float32)
    config, notes = derived_hls_config(resolved(quantized), x)
    assert any(note.startswith("fc_alpha: alpha='auto' scales are not powers of 2") for note in notes)
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", backend="Vitis")
    for layer in hls_model.get_layers():
        for name, variable in layer.weights.items():
            assert not np.isnan(variable.data).any(), f"{layer.name}/{name} has NaN"
    hls_model.compile()
    csim, reference = np.asarray(hls_model.predict(x)).reshape(32, 4), quantized.predict(x, verbose=0)
    assert np.all(csim[:, 2] == reference[:, 2])  # the dead channel: its bias, exactly
    np.testing.assert_allclose(csim, reference, atol=2.0**-10)  # scales kept to 16 significant bits


def test_auto_po2_scales_factor_into_exact_alpha_nodes(tmp_path):
    """hls4ml 1.3 alone fails here (np.product under NumPy 2); with the derived `<layer>_alpha` types the
    C-sim of a CNN with per-channel power-of-2 scales and dead channels is bit-exact."""
    from fpgaprune.hls import derived_hls_config

    po2 = {"default": {**SPEC["default"], "kernel": "quantized_bits(6,0,alpha='auto_po2')"}}
    quantized, dataset = trained_qkeras_cnn(po2, ["conv2[:, :, :, 4]", "conv2[:, :, 3, 2]", "fc[:, 7]"], epochs=2)
    config, notes = derived_hls_config(resolved(quantized), dataset.x_train)
    assert notes == []
    assert {"conv1_alpha", "conv2_alpha", "fc_alpha"} <= set(config["LayerName"])
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    alpha = {layer.name: layer for layer in hls_model.get_layers() if layer.class_name == "ApplyAlpha"}
    assert set(alpha) == {"conv1_alpha", "conv2_alpha", "fc_alpha"}
    assert alpha["conv2_alpha"].weights["scale"].data.ravel()[4] == 1.0  # the dead channel
    assert_csim_bit_exact(hls_model, quantized, dataset.x_test[:200])


def test_separable_and_depthwise_csim_is_bit_exact_in_io_stream(tmp_path):
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, padding="same", name="conv1"),
            L.ReLU(name="relu1"),
            L.SeparableConv2D(6, 3, name="sep"),
            L.ReLU(name="relu2"),
            L.DepthwiseConv2D(2, name="dw"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )
    held = fp.hold(model, prune=["sep/pointwise_kernel[..., 1, :]", "sep/depthwise_kernel[..., 2, 0]", "dw[..., 3, 0]"])
    quantized = to_qkeras(held, SPEC)
    quantized.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    quantized.fit(dataset.x_train, dataset.y_train, epochs=2, verbose=0)
    config, notes = derived_hls_config(resolved(quantized), dataset.x_train)
    assert notes == []
    assert {"depthwise_accum", "pointwise_accum"} <= set(config["LayerName"]["sep"]["Precision"])
    assert "zp2d_conv1" in config["LayerName"]
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_stream", backend="Vitis")
    assert_csim_bit_exact(hls_model, quantized, dataset.x_test[:100])


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_csim_is_close_with_derived_types(tmp_path, kind):
    """hls4ml 1.3 writes QLSTM/QGRU weights unquantized (wrapping); fpgaprune's pass quantizes them as QKeras does.
    With the derived types the C-sim follows QKeras up to hls4ml's sigmoid/tanh tables."""
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    rows = lambda x: x.reshape(-1, 8, 8)  # noqa: E731  (a digit as a sequence of 8 rows)
    layer = L.LSTM(6, name="rnn") if kind == "LSTM" else L.GRU(6, name="rnn")
    model = keras.Sequential([keras.Input((8, 8)), layer, L.Dense(10, name="fc")])
    spec = {"default": {"kernel": "quantized_bits(8,1,alpha=1)", "bias": "quantized_bits(8,3,alpha=1)"}}
    quantized = to_qkeras(fp.hold(model, prune=["rnn/kernel[0, :]", "rnn/recurrent_kernel[:, 0:3]"]), spec)
    quantized.compile(keras.optimizers.Adam(1e-2), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    quantized.fit(rows(dataset.x_train), dataset.y_train, epochs=6, verbose=0)
    config, notes = derived_hls_config(resolved(quantized), rows(dataset.x_train))
    assert [note.split(":")[0] for note in notes] == ["rnn"]
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    rnn = quantized.get_layer("rnn")
    for name, weight, quantizer in (
        ("weight", rnn.cell.kernel, rnn.kernel_quantizer_internal),
        ("recurrent_weight", rnn.cell.recurrent_kernel, rnn.recurrent_quantizer_internal),
    ):
        np.testing.assert_array_equal(hls_model.graph["rnn"].weights[name].data, np.asarray(quantizer(weight)))
    hls_model.compile()
    x = np.ascontiguousarray(rows(dataset.x_test[:200]))
    reference = quantized.predict(x, verbose=0)
    csim = np.asarray(hls_model.predict(x)).reshape(reference.shape)
    assert np.abs(csim - reference).max() <= 0.02 * np.abs(reference).max()
    assert np.mean(csim.argmax(1) == reference.argmax(1)) >= 0.98
    assert np.mean(reference.argmax(1) == dataset.y_test[:200]) > 0.6  # a trained model, not noise


def test_quantized_batchnorm_csim_is_close_with_derived_types(tmp_path):
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.BatchNormalization(name="bn1"),
            L.ReLU(name="relu1"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="fc"),
        ]
    )
    model.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset.x_train, dataset.y_train, epochs=2, verbose=0)
    quantized = to_qkeras(fp.hold(model, prune=["conv1[:, :, 0, 2]"]), SPEC, batchnorm="quantize")
    config, notes = derived_hls_config(resolved(quantized), dataset.x_train)
    assert [note.split(":")[0] for note in notes] == ["bn1"]
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    hls_model.compile()
    x = np.ascontiguousarray(dataset.x_test[:200])
    reference = quantized.predict(x, verbose=0)
    csim = np.asarray(hls_model.predict(x)).reshape(reference.shape)
    # The 16-bit scale moves a quantized-ReLU output by at most one step (1/16) now and then.
    assert np.mean(csim == reference) > 0.95 and np.mean(csim.argmax(1) == reference.argmax(1)) >= 0.99


def test_sigmoid_and_tanh_tables_are_derived_and_close(tmp_path):
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((64,)),
            L.Dense(12, activation="tanh", name="fc1"),
            L.Dense(10, name="fc2"),
            L.Activation("sigmoid", name="sigmoid"),
        ]
    )
    quantized = to_qkeras(fp.hold(model, prune=["fc1[0:16, :]"]), SPEC)
    quantized.compile(keras.optimizers.Adam(3e-3), keras.losses.BinaryCrossentropy())
    targets = np.eye(10)[dataset.y_train]
    quantized.fit(dataset.x_train.reshape(-1, 64), targets, epochs=3, verbose=0)
    config, notes = derived_hls_config(resolved(quantized), dataset.x_train.reshape(-1, 64))
    assert sorted(note.split(":")[0] for note in notes) == ["fc1_tanh", "sigmoid"]
    assert config["LayerName"]["sigmoid"]["table_size"] == 4096
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    tables = {
        layer.name: str(layer.get_attr("table_t").precision)
        for layer in hls_model.get_layers()
        if layer.name in ("fc1_tanh", "sigmoid")
    }
    assert tables == {"fc1_tanh": "fixed<18,2,RND_CONV,SAT,0>", "sigmoid": "ufixed<17,1,RND_CONV,SAT,0>"}
    hls_model.compile()
    x = np.ascontiguousarray(dataset.x_test[:200].reshape(-1, 64))
    reference = quantized.predict(x, verbose=0)
    csim = np.asarray(hls_model.predict(x)).reshape(reference.shape)
    assert np.abs(csim - reference).max() < 0.01  # table steps of 1/256 over [-8, 8)


def test_hard_tanh_and_sigmoid_quantizers_are_bit_exact(tmp_path):
    """quantized_tanh/quantized_sigmoid (QKeras' hard forms) become hls4ml HardActivation nodes, exact with the
    derived types: the clip is exact in the accumulator and the result rounds to nearest even and saturates."""
    from fpgaprune.hls import derived_hls_config

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((64,)),
            L.Dense(12, activation="tanh", name="fc1"),
            L.Dense(10, name="fc2"),
            L.Activation("sigmoid", name="sigmoid"),
        ]
    )
    spec = {
        "default": SPEC["default"],
        "layers": {"fc1": {"activation": "quantized_tanh(8)"}, "sigmoid": {"activation": "quantized_sigmoid(6)"}},
    }
    quantized = to_qkeras(fp.hold(model, prune=["fc1[0:16, :]"]), spec)
    quantized.compile(keras.optimizers.Adam(3e-3), keras.losses.BinaryCrossentropy())
    quantized.fit(dataset.x_train.reshape(-1, 64), np.eye(10)[dataset.y_train], epochs=2, verbose=0)
    config, notes = derived_hls_config(resolved(quantized), dataset.x_train.reshape(-1, 64))
    assert notes == []
    assert config["LayerName"]["fc1_quantized_tanh"]["Precision"]["result"] == "fixed<8,1,RND_CONV,SAT>"
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    hard = {layer.name for layer in hls_model.get_layers() if layer.class_name == "HardActivation"}
    assert hard == {"fc1_quantized_tanh", "sigmoid"}
    x = dataset.x_test[:200].reshape(-1, 64)
    assert_csim_bit_exact(hls_model, quantized, x)
    assert len(np.unique(quantized.predict(x, verbose=0))) > 10  # not saturated: the rounding is exercised


@pytest.mark.csim
def test_layer_names_that_are_no_cpp_identifiers_are_mapped_and_shown_as_the_users(tmp_path):
    """TensorFlow accepts these names; hls4ml writes names into C++ (`firmware/defines.h: expected initializer
    before '.'`). The export writes identifiers, C-sim is bit-exact, and the manifest, the summary, the estimate
    and C-sim's diff speak of the user's names."""
    from fpgaprune.resources import estimate_resources

    keras.utils.set_random_seed(0)
    dataset = data.digits()
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="block1.conv"),
            L.ReLU(name="relu-1"),
            L.Conv2D(4, 3, name="1conv"),
            L.ReLU(name="a>b"),
            L.Flatten(name="flatten"),
            L.Dense(10, name="head/fc"),
        ]
    )
    quantized = to_qkeras(fp.hold(model, prune=["1conv[:, :, 0, 1]", "head/fc[0:8, 3]"]), SPEC)
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=dataset.x_test)
    assert exported.manifest["names"] == {
        "block1_conv": "block1.conv",
        "relu_1": "relu-1",
        "layer_1conv": "1conv",
        "a_b": "a>b",
        "head_fc": "head/fc",
    }
    assert set(exported.manifest["layers"]) == {"block1.conv", "1conv", "head/fc"}
    check = fp.csim(exported, quantized, dataset.x_test[:120])
    assert check.bit_exact and check.samples == 120, check.format()
    summary = exported.summary()
    assert "head/fc" in summary and "1conv" in summary and "head_fc" not in summary
    estimate = estimate_resources(exported, record_of(to_qkeras(model, SPEC)))  # the unpruned twin: what pruning saved
    assert {layer.name for layer in estimate.layers} == {"block1.conv", "1conv", "head/fc"}
    assert {saving.name for saving in estimate.savings()} >= {"1conv[:, :, 0, 1]"}
    assert "defines.h" not in "".join(check.diff)


def test_layer_names_that_clash_as_cpp_identifiers_are_one_line_naming_every_pair(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(2, 3, name="conv.1"),
            L.ReLU(name="conv_1"),
            L.Conv2D(2, 3, name="b-2"),
            L.ReLU(name="b/2"),
            L.Flatten(name="flatten"),
            L.Dense(3, name="fc"),
        ]
    )
    expected = (
        rf"^model '{model.name}': layer names must stay distinct as C\+\+ identifiers: 'conv.1' and "
        r"'conv_1' would both be 'conv_1'; 'b-2' and 'b/2' would both be 'b_2'; rename one of each pair$"
    )
    with pytest.raises(fp.FpgapruneError, match=expected):
        config_from_model(resolved(model))
    with pytest.raises(fp.FpgapruneError, match=expected):
        convert_model(resolved(model), {"Model": {"Precision": "ap_fixed<16,6>", "ReuseFactor": 1}}, tmp_path / "prj")
    assert not (tmp_path / "prj").exists()


def test_a_layer_class_hls4ml_cannot_convert_is_one_line_before_hls4ml(tmp_path):
    model = keras.Sequential(
        [keras.Input((8, 8, 1)), L.Conv2DTranspose(2, 3, name="up"), L.Flatten(name="flatten"), L.Dense(3, name="fc")]
    )
    expected = rf"^model '{model.name}': layer 'up' is a Conv2DTranspose, which hls4ml [0-9.]+ cannot convert"
    with pytest.raises(fp.FpgapruneError, match=expected):
        convert_model(resolved(model), {"Model": {"Precision": "ap_fixed<16,6>", "ReuseFactor": 1}}, tmp_path / "prj")
    assert not (tmp_path / "prj").exists()


def test_layers_that_act_only_in_training_are_left_out_for_hls4ml_and_the_outputs_stay_the_same():
    """hls4ml 1.3 skips Dropout only; GaussianNoise, SpatialDropout2D, RandomFlip and kin are identities at
    inference too. A Sequential model without an InputLayer keeps its input shape when its first layer goes."""
    from fpgaprune.frontends.qkeras.hls import inference_model
    from fpgaprune.model.layer_kinds import IDENTITY_AT_INFERENCE

    keras.utils.set_random_seed(0)
    training_only = [
        L.RandomFlip(name="flip", input_shape=(8, 8, 1)),
        L.GaussianNoise(0.3, name="noise"),
        L.Conv2D(3, 3, name="conv1"),
        L.SpatialDropout2D(0.3, name="sdrop"),
        L.ReLU(name="relu"),
        L.RandomContrast(0.5, name="contrast"),
        L.Flatten(name="flatten"),
        L.GaussianDropout(0.3, name="gdrop"),
        L.AlphaDropout(0.3, name="adrop"),
        L.ActivityRegularization(0.1, name="reg"),
        L.Identity(name="same"),
        L.Dropout(0.3, name="drop"),
        L.Dense(3, name="fc"),
    ]
    model = keras.Sequential(training_only)
    twin = inference_model(model)
    assert [layer.name for layer in twin.layers] == ["conv1", "relu", "flatten", "fc"]
    assert {type(layer).__name__ for layer in model.layers} - {"Conv2D", "ReLU", "Flatten", "Dense"} <= set(
        IDENTITY_AT_INFERENCE
    )
    x = np.random.default_rng(0).random((16, 8, 8, 1)).astype(np.float32)
    assert np.array_equal(twin.predict(x, verbose=0), model.predict(x, verbose=0))
    names = set(config_from_model(resolved(model))["LayerName"])
    assert {"conv1", "fc"} <= names and not names & {"flip", "noise", "sdrop", "contrast", "gdrop", "drop", "same"}
    plain = keras.Sequential([keras.Input((8, 8, 1)), L.Conv2D(2, 3, name="conv1"), L.Flatten(), L.Dense(3)])
    assert inference_model(plain) is plain


def test_a_shape_only_hls4mls_handlers_refuse_is_named_by_layer_and_the_handlers_are_left_as_they_were():
    """LayerNormalization passes the class check, but hls4ml's handler takes only 3-D input (batch included)."""
    from importlib import import_module

    from fpgaprune.hls.adapter import conversion_problem

    handlers = import_module("hls4ml.converters.keras_v2_to_hls").layer_handlers
    before = dict(handlers)
    four_d = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(2, 3, name="conv1"),
            L.LayerNormalization(name="norm"),
            L.Flatten(name="flatten"),
            L.Dense(3, name="fc"),
        ]
    )
    problem = conversion_problem(resolved(four_d))
    assert problem.startswith("layer 'norm': hls4ml ") and "only three-dimensional input" in problem, problem
    assert "\n" not in problem and handlers == before
    three_d = keras.Sequential(
        [keras.Input((6, 4)), L.LayerNormalization(name="norm"), L.Flatten(name="flatten"), L.Dense(3, name="fc")]
    )
    assert conversion_problem(resolved(three_d)) is None and handlers == before
