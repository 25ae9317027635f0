"""An HGQ2 CNN from a chosen kernel to a C-simulated, kernel-sparse project (the HGQ2 environment): prune a chosen
kernel and half of conv2's by L1, HGQ2 QAT with the EBOPs penalty, `trace_minmax`, then hls4ml's Keras 3
converter with fpgaprune's kernel-sparse pass. C-sim is bit-exact at the logits against the HGQ2 model and within
one step of each BitExact type before them; the instrumented C-sim runs one product per live weight (zero, pruned
or 0-bit weights: none), in io_parallel and io_stream; the distributed-arithmetic strategy is bit-exact too."""

import numpy as np
import pytest

pytest.importorskip("hgq", reason="HGQ2 lives in its own environment (requirements/hgq2.txt, docs/hgq2.md)")
import keras  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import fpgaprune as fp  # noqa: E402
from fpgaprune.errors import ExportError  # noqa: E402
from fpgaprune.framework import front_end_of  # noqa: E402
from fpgaprune.hls import count_products  # noqa: E402
from fpgaprune.model.task import infer_task  # noqa: E402
from fpgaprune.record import record_of, resolved

CHOSEN = "conv2[:, :, 3, 5]"
POSITIONS = {"conv1": 36, "conv2": 16, "fc": 1}  # output positions per inference (8x8 -> 6x6 -> 4x4)


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    x = (np.minimum(data.images, 15) / 16).astype("float32")[..., None]
    return x[:1400], data.target[:1400], x[1400:], data.target[1400:]


@pytest.fixture(scope="module")
def pruned(digits):
    x, y, _, _ = digits
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(6, 3, activation="relu", name="conv1"),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(10, name="fc"),
        ]
    )
    model.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=4, batch_size=64, verbose=0)
    return fp.prune(model, 0.5, layers=["conv2"], selections=[CHOSEN])


def _quantized(pruned, digits, granularity: str):
    x, y, _, _ = digits
    spec = {"library": "hgq2", "hgq2": {"beta0": 1e-5, "activation_granularity": granularity}}
    quantized = fp.quantized_twin(pruned, spec)
    front = front_end_of(quantized)
    task = infer_task(resolved(quantized), y, y, "digits")
    front.fit(quantized, x, y, task=task, optimizer="adamw", learning_rate=5e-3, epochs=3, batch_size=64)
    front.calibrate(quantized, x)
    return quantized


def _live_products(model) -> dict:
    found = {}
    for name, positions in POSITIONS.items():
        layer = model.get_layer(name)
        live = np.count_nonzero(np.asarray(layer.kq(layer.kernel, training=False)))
        found[name] = int(live) * positions
    return found


@pytest.mark.csim
@pytest.mark.parametrize(
    "preset, granularity",
    [("latency_parallel", "element"), ("latency_stream", "tensor"), ("distributed_arithmetic", "element")],
)
def test_an_hgq2_cnn_exports_kernel_sparse_and_bit_exact(tmp_path, digits, pruned, preset, granularity):
    _, _, x_test, y_test = digits
    quantized = _quantized(pruned, digits, granularity)
    conv2 = quantized.get_layer("conv2")
    assert not np.asarray(conv2.kq(conv2.kernel, training=False))[:, :, 3, 5].any()
    result = fp.export(quantized, preset, "pynq-z2", tmp_path / "prj", x=x_test[:100])
    check = fp.csim(result, quantized, x_test)
    assert check.bit_exact and check.samples == len(x_test), check.format()
    assert check.passed, check.format()
    assert check.argmax_agreement == 1.0
    assert (quantized.predict(x_test, verbose=0).argmax(1) == y_test).mean() > 0.8
    if preset == "distributed_arithmetic":
        assert all(
            "distributed arithmetic" in node["code"]
            for node in result.manifest["hls_nodes"].values()
            if node["class"] in ("Conv2D", "Dense")
        )
        _da_circuits_priced_as_built(quantized, result.hls_model)
        _measured_as_built(quantized, result.hls_model, tmp_path, x_test)
        return
    _priced_with_the_exports_types(quantized, result.manifest)
    expected = _live_products(quantized)
    assert expected["conv2"] <= 0.5 * 8 * 6 * 9 * 16  # half of conv2's kernels, the chosen one among them, cost none
    assert count_products(result.hls_model, x_test[:3]) == expected
    assert result.manifest["layers"]["conv2"]["kernels_pruned"].count([3, 5]) == 1


@pytest.mark.csim
def test_a_functional_hgq2_model_exports_bit_exact_with_its_holds(tmp_path, digits, pruned):
    """The same CNN as a functional model, as people write them (Keras 3 writes its graph unlike tf_keras)."""
    _, _, x_test, _ = digits
    image = keras.Input((8, 8, 1), name="image")
    out = image
    for layer in pruned.layers:
        out = layer(out)
    quantized = _quantized(fp.hold(keras.Model(image, out), fp.manifest_of(pruned)), digits, "tensor")
    conv2 = quantized.get_layer("conv2")
    assert not np.asarray(conv2.kq(conv2.kernel, training=False))[:, :, 3, 5].any()
    result = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x_test[:100])
    check = fp.csim(result, quantized, x_test)
    assert check.bit_exact and check.passed, check.format()
    assert result.manifest["layers"]["conv2"]["kernels_pruned"].count([3, 5]) == 1


def test_io_stream_with_a_bit_width_per_activation_value_is_one_line(tmp_path, digits, pruned):
    _, _, x_test, _ = digits
    quantized = fp.quantized_twin(pruned, {"library": "hgq2"})  # HGQ2's default: one width per value
    with pytest.raises(ExportError, match=r"cannot export it with io_stream: .*activation_granularity: tensor\)$"):
        fp.export(quantized, "latency_stream", "pynq-z2", tmp_path / "prj", x=x_test[:10])
    assert not (tmp_path / "prj").exists()


def test_catapult_is_one_line_naming_hls4mls_limit(tmp_path, digits, pruned):
    _, _, x_test, _ = digits
    quantized = fp.quantized_twin(pruned, {"library": "hgq2"})
    expected = r"does not export HGQ2 models to Catapult \(it has not tested them there\); export to Vitis or Vivado"
    with pytest.raises(ExportError, match=expected):
        fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x_test[:10], backend="Catapult")
    assert not (tmp_path / "prj").exists()


def _priced_with_the_exports_types(quantized, manifest):
    """What a budget prices before conversion (`hgq2/types.py`) is what hls4ml's BitExact pass typed."""
    from fpgaprune.frontends.hgq2.types import hardware_types

    derived = hardware_types(quantized).types
    for name in POSITIONS:
        hardware = manifest["hls_nodes"][name]["hardware"]
        assert derived[name]["weight"].hls() == hardware["weight_type"], name
        assert derived[name]["input"].hls() == hardware["input_type"], name
        assert derived[name]["accum"].width == hardware["accum_bits"], name


def _da_circuits_priced_as_built(quantized, hls_model):
    """The DA circuit a price traces (`kernel_input_kif`: per-row input types; `matrix_logic`) is the one hls4ml's
    distributed-arithmetic pass built: da4ml's cost is equal, layer by layer."""
    from fpgaprune.frontends.hgq2.quantizers import quantized as quantized_values
    from fpgaprune.frontends.hgq2.types import kernel_input_kif
    from fpgaprune.workers.circuit import matrix_logic

    varied = []
    for name in POSITIONS:
        layer = quantized.get_layer(name)
        kernel = quantized_values(layer, "kernel", layer.kernel.numpy()).reshape(-1, layer.kernel.shape[-1])
        bias = quantized_values(layer, "bias", layer.bias.numpy())
        kif = kernel_input_kif(layer)
        assert all(np.shape(v) == kernel.shape[:1] for v in kif), name  # one type per row
        varied += [name] if len({tuple(row) for row in np.transpose(kif)}) > 1 else []
        logic = matrix_logic(kernel, kif, bias)
        assert logic.cost == hls_model.graph[name].get_attr("da_kernel_cost"), name
    assert varied, "no layer whose rows' input types differ: the per-row types were not exercised"


def _measured_as_built(quantized, da_model, tmp_path, x_test):
    """A run's yosys measurement of the multiplier export (`measure_export`, sample scope) traces each layer's DA
    circuit with the types hls4ml's DA pass gives it: the same da4ml cost as the DA export's nodes."""
    from fpgaprune.resources.measurement_plan import measure_export

    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "lp", x=x_test[:100])
    measured = measure_export(exported, record_of(quantized), fp.estimate(exported), "sample")
    assert measured.samples and not measured.unmeasured, measured.unmeasured
    assert {name: measured.traced[name] for name in POSITIONS} == {
        name: da_model.graph[name].get_attr("da_kernel_cost") for name in POSITIONS
    }


@pytest.mark.csim
def test_a_layer_whose_sums_pass_24_bits_is_judged_by_the_float32_bound(tmp_path):
    """Inputs of 16 fraction bits into a Dense of 64 inputs: HGQ2's float32 sums may round where hls4ml's are
    exact; the bound says so at that layer and carries it through the quantizer after it to the logits, and C-sim
    is judged by it."""
    from fpgaprune.hls.tolerance import export_layer_tolerances

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = (np.round(rng.normal(size=(600, 64)) * 2**16) / 2**16).astype("float32")
    y = np.argmax(x[:, :10] + 0.3 * x[:, 10:20], axis=1)
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(16, activation="relu", name="fc1"), keras.layers.Dense(10, name="fc2")]
    )
    spec = {"library": "hgq2", "hgq2": {"beta0": 1e-8, "activation_bits": 16}}
    quantized = fp.quantized_twin(fp.prune(model, 0.5, structure="element", layers=["fc1"]), spec)
    front = front_end_of(quantized)
    task = infer_task(resolved(quantized), y, y, "jets")
    front.fit(quantized, x[:500], y[:500], task=task, optimizer="adamw", learning_rate=5e-3, epochs=2, batch_size=64)
    front.calibrate(quantized, x[:500])
    exported = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x[500:])
    bounds = export_layer_tolerances(
        resolved(quantized), exported.config, exported.manifest.get("names"), exported.input_type
    )
    assert "HGQ2 accumulates 'fc1' in float32, not exactly" in bounds["fc1"].reason, bounds["fc1"]
    assert bounds["fc2"] is not None and "HGQ2 accumulates 'fc1'" in bounds["fc2"].reason  # carried to the logits
    check = fp.csim(exported, quantized, x[500:])
    assert check.passed, check.format()


@pytest.mark.csim
@pytest.mark.parametrize("granularity", ["tensor", "channel"])
def test_an_hgq2_cnn_streams_bit_exactly_through_its_input_quantizers(tmp_path, digits, pruned, granularity):
    """The RTL backend writes HGQ2's input quantizers: one type per tensor, or per channel (the same at every
    position), streams (each layer one circuit reused, its taps quantized channel by channel), bit-exact against
    HGQ2; quantized value by value, the types differ by position, so the stream is one line naming conv1 and the
    ways out (nothing written)."""
    x_test = digits[2]
    quantized = _quantized(pruned, digits, granularity)
    bits = np.asarray(quantized.get_layer("conv2").iq.quantizer.bits)
    assert bits.shape == ((1, 1, 1, 6) if granularity == "channel" else (1,) * bits.ndim), bits.shape
    exported = fp.export(quantized, "latency_parallel", "ulx3s-85f", tmp_path / "rtl", x=x_test[:100], backend="RTL")
    assert exported.manifest["layout"] == "stream" and [s["layers"] for s in exported.manifest["stages"]] == [
        ["conv1"],
        ["conv2"],
        ["flatten"],
        ["fc"],
    ]
    check = fp.csim(exported, quantized, x_test[:100])
    assert check.bit_exact and check.samples == 100, check.format()
    by_value = _quantized(pruned, digits, "element")
    with pytest.raises(ExportError) as refused:
        fp.export(by_value, "latency_parallel", "ulx3s-85f", tmp_path / "el", x=x_test[:50], backend="RTL")
    assert str(refused.value).startswith("layer 'conv1': its input quantizer's types differ by position (HGQ2")
    assert "Unroll: true" in str(refused.value) and "activation_granularity: channel" in str(refused.value)
    assert not (tmp_path / "el").exists()


@pytest.mark.csim
def test_unrolled_the_rtl_computes_what_da4ml_trace_model_gives_at_no_more_cost(tmp_path, digits):
    """An HGQ2 MLP quantized value by value, fully unrolled (the rtl_unrolled preset): the RTL simulation is
    bit-exact against HGQ2; da4ml's own `trace_model` of the same model gives the same outputs on every sample,
    and the RTL's logic costs at most 5% more than trace_model's (da4ml's cost of each)."""
    from da4ml.converter import trace_model
    from da4ml.trace import comb_trace

    x, y, x_test, _ = digits
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(16, activation="relu", name="fc1"), keras.layers.Dense(10, name="fc2")]
    )
    model.compile(keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    flat, flat_test = x.reshape(len(x), -1), x_test.reshape(len(x_test), -1)
    model.fit(flat, y, epochs=3, batch_size=64, verbose=0)
    pruned = fp.prune(model, 0.5, layers=["fc1"])
    quantized = _quantized(pruned, (flat, y, flat_test, None), "element")
    exported = fp.export(quantized, "rtl_unrolled", "ulx3s-85f", tmp_path / "rtl", x=flat_test[:100], backend="RTL")
    assert exported.manifest["layout"] == "unrolled"
    check = fp.csim(exported, quantized, flat_test[:200])
    assert check.bit_exact and check.samples == 200, check.format()
    inputs, outputs = trace_model(quantized)
    theirs = comb_trace(inputs, outputs)
    assert np.array_equal(exported.hls_model.logic.predict(flat_test), theirs.predict(flat_test))
    assert exported.manifest["da4ml_cost"] <= 1.05 * theirs.cost, (exported.manifest["da4ml_cost"], theirs.cost)


def _with_quantizer_layers(digits, config):
    """An HGQ2 CNN written as HGQ2 users (and PQuantML's carried copies) write one: a standalone `Quantizer` layer
    on the input and before each ReLU, the convolutions' own input quantizers off; one epoch of HGQ2 QAT."""
    from hgq.layers import QConv2D, QDense, Quantizer

    x, y, _, _ = digits
    keras.utils.set_random_seed(2)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            Quantizer(config, name="q_in"),
            QConv2D(6, 3, enable_iq=False, name="conv1"),
            Quantizer(config, name="q1"),
            keras.layers.Activation("relu", name="relu1"),
            QConv2D(8, 3, enable_iq=False, name="conv2"),
            Quantizer(config, name="q2"),
            keras.layers.Activation("relu", name="relu2"),
            keras.layers.Flatten(name="flatten"),
            QDense(10, enable_iq=False, name="fc"),
        ]
    )
    model.compile(keras.optimizers.Adam(5e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, epochs=1, batch_size=64, verbose=0)
    front_end_of(model).calibrate(model, x)
    return model


@pytest.mark.csim
def test_the_rtl_writes_hgq2_quantizer_layers_bit_exactly_streamed_and_unrolled(tmp_path, digits):
    """HGQ2's standalone `Quantizer` layer is its input quantizer and nothing more: one type per tensor streams
    (each joins the circuit of the layer before it), one per value unrolls; both bit-exact against HGQ2."""
    from hgq.quantizer import QuantizerConfig

    x_test = digits[2]
    per_tensor = QuantizerConfig("kif", "datalane", i0=2, f0=6, homogeneous_axis=None, heterogeneous_axis=())
    quantized = _with_quantizer_layers(digits, per_tensor)
    record = record_of(quantized)
    assert all(record.layers[name].input_quantizer is not None for name in ("q_in", "q1", "q2"))
    exported = fp.export(quantized, "latency_parallel", "ulx3s-85f", tmp_path / "rtl", x=x_test[:100], backend="RTL")
    stages = [s["layers"] for s in exported.manifest["stages"]]
    assert exported.manifest["layout"] == "stream" and ["conv1", "q1", "relu1"] in stages, stages
    check = fp.csim(exported, quantized, x_test[:100])
    assert check.bit_exact and check.samples == 100, check.format()
    by_value = _with_quantizer_layers(digits, QuantizerConfig("kif", "datalane", i0=2, f0=6))
    assert np.asarray(by_value.get_layer("q1").quantizer.bits).shape[1:] == (6, 6, 6)
    unrolled = fp.export(by_value, "rtl_unrolled", "ulx3s-85f", tmp_path / "un", x=x_test[:100], backend="RTL")
    check = fp.csim(unrolled, by_value, x_test[:100])
    assert check.bit_exact and check.samples == 100, check.format()
