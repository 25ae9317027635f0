"""Exported projects compiled with g++: bit-exact logits, executed products counted, readable diffs."""

import numpy as np
import pytest
from hls_helpers import L, branching_model, digits, digits_cnn, live_weights, output_positions, product_sites, trained

import fpgaprune as fp
from fpgaprune.hls import convert_model, count_products, csim_check, export_config
from fpgaprune.hls.backend import backend_named
from fpgaprune.hls.precision import SOFTMAX_TYPES
from fpgaprune.record import record_of, resolved
from fpgaprune.resources import estimate_resources
from fpgaprune.tfk import keras

pytestmark = pytest.mark.csim


@pytest.fixture(scope="module")
def dataset():
    return digits()


def test_stream_same_padding_cnn_is_bit_exact_and_runs_only_live_products(tmp_path, dataset):
    model = trained(digits_cnn(padding="same"), ["conv2[:, :, 1, :]", "conv2[:, :, 3, 2]", "fc[10:60, :]"], dataset)
    result = fp.export(model, "latency_stream", "pynq-z2", tmp_path / "prj", x=dataset.x_test)
    check = csim_check(result.hls_model, resolved(model), dataset.x_test[:150], result.input_type)
    assert check.bit_exact and check.float32_exact, check.format()

    x = dataset.x_test[:3]
    live = live_weights(model)
    expected = {name: live[name] * output_positions(model.get_layer(name)) for name in live}
    assert backend_named(result.manifest["backend"]).count_products(result, x) == expected  # the backend counts
    assert not (result.path / "firmware" / "nnet_utils" / "fpgaprune_counter.h").exists()  # export untouched

    config, io_type, _ = export_config(resolved(model), "latency_stream", dataset.x_test, kernel_sparse=False)
    stock = convert_model(resolved(model), config, tmp_path / "stock", io_type=io_type, backend="Vitis")
    every = {
        layer.name: int(np.prod(layer.kernel.shape)) * output_positions(layer)
        for layer in model.layers
        if hasattr(layer, "kernel")
    }
    assert count_products(stock, x) == every
    assert sum(expected.values()) < sum(every.values())
    rows = estimate_resources(result).csynth  # the C-synthesis model fitted on published io_stream CNN designs
    assert {(r["layer"], r["tool"]) for r in rows} == {(name, "Vivado HLS 2020.1 (io_stream)") for name in live}
    assert all(r["stock_LUT"] >= r["fpgaprune_LUT"] and r["held_out"].startswith("io_stream") for r in rows)
    _the_budget_prices_as_the_checked_model_reads(model, result, rows, "Vivado", "io_stream")


def test_resource_conv_with_reuse_factor_is_bit_exact(tmp_path, dataset):
    model = trained(digits_cnn(padding="valid"), ["conv2[:, :, 0, 1:4]", "conv1[..., 3]"], dataset)
    preset = {"IOType": "io_parallel", "HLSConfig": {"Model": {"Strategy": "Resource", "ReuseFactor": 3}}}
    result = fp.export(model, preset, "arty-a7-100t", tmp_path / "prj", x=dataset.x_test)
    assert result.hls_model.graph["conv2"].get_attr("reuse_factor") == 3
    check = csim_check(result.hls_model, resolved(model), dataset.x_test, result.input_type)
    assert check.bit_exact, check.format()
    live = live_weights(model)
    expected = {name: live[name] * output_positions(model.get_layer(name)) for name in live}
    assert count_products(result.hls_model, dataset.x_test[:2]) == expected  # at reuse factor 3 too


def test_dense_mlp_is_bit_exact_at_the_logits_before_its_softmax(tmp_path, dataset):
    mlp = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Flatten(name="flatten"),
            L.Dense(24, name="fc1"),
            L.ReLU(name="relu1"),
            L.Dense(10, name="fc2"),
            L.Activation("softmax", name="softmax"),
        ]
    )
    model = trained(
        mlp,
        ["fc1[0:8, :]", "fc1[:, 5]", "fc2[3:9, 0]"],
        dataset,
        epochs=6,
        loss=keras.losses.SparseCategoricalCrossentropy(),
    )
    result = fp.export(model, "latency_parallel", "zcu102", tmp_path / "prj", x=dataset.x_test)
    softmax = next(layer for layer in result.hls_model.get_layers() if layer.name == "softmax")
    for table in ("exp_table_t", "inv_table_t"):  # the derived table types reach hls4ml
        assert str(softmax.get_attr(table).precision) == SOFTMAX_TYPES[table].hls().replace(">", ",0>")
    check = csim_check(result.hls_model, resolved(model), dataset.x_test, result.input_type)
    assert check.table_activation and check.layer == "fc2"
    assert check.bit_exact, check.format()
    # the decisions after the softmax agree but where its rounded outputs tie at the top (QKeras' exact ones do not)
    assert check.samples - round(check.argmax_agreement * check.samples) <= check.ties, check.format()
    estimate = estimate_resources(result)
    _the_fit_is_judged_by_the_vendor_checked_model(estimate)
    _the_budget_prices_as_the_checked_model_reads(model, result, estimate.csynth, "Vitis", "io_parallel")


def _the_fit_is_judged_by_the_vendor_checked_model(estimate):
    """Dense layers in io_parallel exported for Vitis: the LUT verdict comes from the Vitis HLS 2024.1 model
    (fpgaprune's figure: its per-product terms, no zero sites) with its held-out error; its DSPs are not modelled,
    so the DSP verdict is the rules', labelled unchecked."""
    from fpgaprune.resources.csynth import MODELS

    verdicts = {v.resource: v for v in estimate.fit_verdicts()}
    lut, dsp, vitis = verdicts["LUT"], verdicts["DSP"], MODELS["vitis 2024.1"]
    total = sum(r["fpgaprune_LUT"] for r in estimate.csynth if r["tool"] == vitis.tool)
    assert estimate.backend == "Vitis" and vitis.tool in lut.source and lut.error == vitis.errors["LUT"]
    assert lut.fraction == pytest.approx(total / estimate.board.resources["LUT"]) and lut.verdict == "fits"
    assert dsp.error is None and "rule estimate" in dsp.source and dsp.text().startswith("DSP ")
    assert estimate.verdict() == "fits" and estimate.fits() and "held-out error -2.5% to +21.1%" in lut.text()


def _the_budget_prices_as_the_checked_model_reads(model, result, rows, backend, io_type):
    """The budget's knapsack prices each kernel entry with the checked C-synthesis model of the backend's tool
    (per resource it models; else the rules): the entries of each layer sum to the model's fpgaprune figure of
    the exported layer, up to its rounding (LUT) and its DSPs rounded up."""
    from fpgaprune.budget import HardwareCosts
    from fpgaprune.hls import load_preset
    from fpgaprune.resources.entry_costs import RULES_SOURCE

    preset = "latency_stream" if io_type == "io_stream" else "latency_parallel"
    costs = HardwareCosts(
        {}, load_preset(preset)["HLSConfig"], result.input_type, result.board, backend=backend, io_type=io_type
    )
    priced = costs(model)
    rows = [row for row in rows if row["tool"].startswith(f"{backend} HLS")]
    tool = rows[0]["tool"]
    for row in rows:
        assert priced.lut[row["layer"]].sum() == pytest.approx(row["fpgaprune_LUT"], abs=0.5)
    assert costs.sources["LUT"] == f"the {tool} C-synthesis model"
    if rows[0]["fpgaprune_DSP"] is None:  # the tool's DSPs are not modelled: the rules price them
        assert costs.sources["DSP"] == RULES_SOURCE
        return
    for row in rows:
        assert row["fpgaprune_DSP"] - 1 < priced.dsp[row["layer"]].sum() <= row["fpgaprune_DSP"] + 1e-9
    assert costs.sources["DSP"] == f"the {tool} C-synthesis model"
    other = HardwareCosts(
        {},
        load_preset(preset)["HLSConfig"],
        result.input_type,
        result.board,
        backend="Vitis" if backend == "Vivado" else "Vivado",
        io_type=io_type,
    )
    other(model)  # no model of the other tool covers these layers here: the rules price them, and say so
    assert other.sources == {"DSP": RULES_SOURCE, "LUT": RULES_SOURCE}


def test_a_disagreement_is_shown_layer_by_layer(tmp_path, dataset):
    model = trained(digits_cnn(padding="valid"), ["conv2[:, :, 1, :]"], dataset, epochs=1)
    narrow = {"LayerName": {"conv1": {"Precision": {"result": "fixed<5,2>"}}}}  # too narrow on purpose
    result = fp.export(model, "latency_stream", "pynq-z2", tmp_path / "prj", x=dataset.x_test, overrides=narrow)
    check = csim_check(result.hls_model, resolved(model), dataset.x_test[:40], result.input_type)
    assert not check.bit_exact
    table = check.format()
    assert "conv1" in check.diff[2] and "first (sample, index)" in check.diff[0], table
    assert check.first_difference.startswith("the first layer that differs is 'conv1'"), check.first_difference


def test_distributed_arithmetic_export_is_bit_exact(tmp_path, dataset):
    pytest.importorskip("da4ml")
    model = trained(digits_cnn(padding="valid"), ["conv2[:, :, 1, :]", "fc[0:30, :]"], dataset)
    result = fp.export(model, "distributed_arithmetic", "kv260", tmp_path / "prj", x=dataset.x_test)
    codes = {node["code"] for node in result.manifest["hls_nodes"].values()}
    assert codes == {"distributed arithmetic (da4ml): zero weights make no logic"}
    check = csim_check(result.hls_model, resolved(model), dataset.x_test, result.input_type)
    assert check.bit_exact, check.format()
    _the_measured_da_circuit_is_the_one_hls4ml_builds(result.hls_model, model)


def _the_measured_da_circuit_is_the_one_hls4ml_builds(hls_model, model):
    """yosys measures da4ml's adder graph of `x @ W + b` with hls4ml's own settings: the same circuit, the same
    da4ml cost as hls4ml's distributed_arithmetic pass reports for each node."""
    from fpgaprune.framework import front_end_of
    from fpgaprune.hls.manifest import quantized_kernel
    from fpgaprune.resources.yosys import adder_graph, fixed_kif

    nodes = [node for node in hls_model.get_layers() if node.get_attr("da_kernel_cost") is not None]
    assert nodes
    front = front_end_of(model)
    for node in nodes:
        layer = model.get_layer(node.name)
        kernel = quantized_kernel(record_of(model).layers[layer.name])
        bias = front.quantized(layer, "bias", layer.bias) if layer.use_bias else None
        kif = fixed_kif(node.get_input_variable().type.precision)
        ours = adder_graph(kernel.reshape(-1, kernel.shape[-1]), kif, bias)
        assert ours.cost == node.get_attr("da_kernel_cost"), node.name


def test_average_pooling_is_bit_exact_when_its_window_is_a_power_of_two(tmp_path, dataset):
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.AveragePooling2D(2, name="avg"),
            L.Conv2D(6, 2, name="conv2"),
            L.ReLU(name="relu2"),
            L.GlobalAveragePooling2D(name="gap"),
            L.Dense(10, name="fc"),
        ]
    )
    quantized = trained(model, ["conv2[:, :, 1, :]"], dataset)
    result = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=dataset.x_test)
    layers = result.config["LayerName"]
    assert layers["avg"]["Precision"]["result"] == "ufixed<8,2>"  # relu1 ufixed<6,2> + log2(4) fraction bits
    assert layers["gap"]["Precision"]["accum"].startswith("ufixed<") and not result.notes
    check = csim_check(result.hls_model, resolved(quantized), dataset.x_test, result.input_type)
    assert check.bit_exact, check.format()


def test_one_dimensional_averages_are_exact_over_a_power_of_two_and_within_the_types_tolerance_otherwise(
    tmp_path, dataset
):
    """Digits as 8 rows of 8: AveragePooling1D(2) is exact; a global average over 3 positions (not a power of 2)
    is judged by the tolerance its accum and result types give, which the result states."""
    from fpgaprune.hls.tolerance import export_tolerance

    rows = type(dataset)(
        dataset.name, dataset.x_train[..., 0], dataset.y_train, dataset.x_test[..., 0], dataset.y_test, dataset.classes
    )
    model = keras.Sequential(
        [
            keras.Input((8, 8)),
            L.Conv1D(6, 3, name="conv1"),
            L.ReLU(name="relu1"),
            L.AveragePooling1D(2, name="avg"),
            L.GlobalAveragePooling1D(name="gap"),
            L.Dense(10, name="fc"),
        ]
    )
    quantized = trained(model, ["conv1[:, 0, 2]"], rows)
    result = fp.export(quantized, "latency_parallel", "pynq-z2", tmp_path / "prj", x=rows.x_test)
    tolerance = export_tolerance(resolved(quantized), result.config)
    assert "'gap' (3 values)" in tolerance.reason and "'avg'" not in tolerance.reason
    check = csim_check(result.hls_model, resolved(quantized), rows.x_test, result.input_type, tolerance=tolerance)
    assert check.within_tolerance and check.passed, check.format()
    assert check.max_abs_diff <= tolerance.absolute and check.argmax_agreement > 0.97
    traced_avg = [line for line in check.diff if line.startswith("avg ")]
    assert not traced_avg, check.diff  # the power-of-2 average agrees bit for bit


def test_branching_model_with_merges_is_bit_exact_in_io_stream(tmp_path, dataset):
    """A functional model (residual Add, Concatenate, ZeroPadding2D): derived merge types, kernel-sparse convs."""
    model = trained(branching_model(), ["conv2[:, :, 1, :]", "conv3[:, :, 2, 0]"], dataset)
    result = fp.export(model, "latency_stream", "pynq-z2", tmp_path / "prj", x=dataset.x_test)
    assert result.notes == []
    check = csim_check(result.hls_model, resolved(model), dataset.x_test[:150], result.input_type)
    assert check.bit_exact, check.format()
    assert product_sites(result.path) == live_weights(model)  # one multiplication site per live weight


def test_training_only_layers_are_left_out_and_the_project_stays_bit_exact(tmp_path, dataset):
    """Augmentation, noise and dropout act in training (QAT here) and are identities in the exported project."""
    image = keras.Input((8, 8, 1), name="image")
    x = L.GaussianNoise(0.05, name="noise")(L.RandomFlip("horizontal", name="flip")(image))
    x = L.SpatialDropout2D(0.1, name="sdrop")(L.ReLU(name="relu1")(L.Conv2D(4, 3, name="conv1")(x)))
    x = L.ReLU(name="relu2")(L.Conv2D(6, 3, padding="same", name="conv2")(x))
    x = L.Dropout(0.1, name="drop")(L.GaussianDropout(0.1, name="gdrop")(L.Flatten(name="flatten")(x)))
    model = trained(keras.Model(image, L.Dense(10, name="fc")(x)), ["conv2[:, :, 1, :]", "conv2[:, :, 3, 2]"], dataset)
    result = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=dataset.x_test)
    assert [node.name for node in result.hls_model.get_layers()] == [
        "image",
        "conv1",
        "relu1",
        "conv2",
        "relu2",
        "flatten",
        "fc",
    ]
    check = csim_check(result.hls_model, resolved(model), dataset.x_test[:150], result.input_type)
    assert check.bit_exact, check.format()
    assert product_sites(result.path) == live_weights(model)
