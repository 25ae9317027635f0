"""`Multipliers: fabric`: every product of a layer built from LUTs. The generated code binds each product, the
estimate has no DSP and says how it priced the LUTs, Catapult refuses, and the LUT price is checked against yosys."""

import re
from pathlib import Path

import numpy as np
import pytest
from hls_helpers import X8, digits_cnn, trained
from quantizer_specs import SPEC12

import fpgaprune as fp
from fpgaprune.errors import HlsConfigError
from fpgaprune.hls.multipliers import dsp_free_overrides
from fpgaprune.resources import rules
from fpgaprune.resources.fabric_products import measure_product

PRAGMAS = {"Vitis": "#pragma HLS BIND_OP variable=prod op=mul impl=fabric", "Vivado": "core=Mul_LUT"}


@pytest.fixture(scope="module")
def model():
    return trained(digits_cnn(), ["conv2[:, :, 1, :]"], None, epochs=0, spec=SPEC12)


def _export(model, path: Path, backend: str, overrides=None):
    return fp.export(
        model, "latency_parallel", "zcu102", path, x=X8, backend=backend, overrides=overrides, tb_samples=4
    )


def _classes(project: Path) -> dict:
    """{layer: its product class's text} from nnet_code_gen.h."""
    text = (Path(project) / "firmware" / "nnet_utils" / "nnet_code_gen.h").read_text()
    blocks = text.split("// fpgaprune kernel-sparse product of ")[1:]
    return {block.split(" ", 1)[0]: block for block in blocks}


@pytest.mark.parametrize("backend", ["Vitis", "Vivado"])
def test_fabric_binds_every_product_and_the_estimate_spends_no_dsp(model, tmp_path, backend):
    auto = _export(model, tmp_path / "auto", backend)
    fabric = _export(model, tmp_path / "fabric", backend, dsp_free_overrides())
    assert not any("impl=fabric" in c or "Mul_LUT" in c for c in _classes(auto.path).values())
    classes = _classes(fabric.path)
    assert set(classes) == {"conv1", "conv2", "fc"}
    for layer, text in classes.items():
        assert text.count(PRAGMAS[backend]) == 1, layer  # in `mul`, the one place every product is made
    assert {e["hardware"]["multipliers"] for e in fabric.manifest["hls_nodes"].values() if "hardware" in e} == {
        "fabric"
    }
    before, after = fp.estimate(auto), fp.estimate(fabric)
    assert before.total("pruned").dsp > 0 and after.total("pruned").dsp == 0
    assert after.total("pruned").lut > before.total("pruned").lut
    assert all(s.dsp == 0 for s in fp.estimate(fabric, model).savings())
    notes = "\n".join(after.notes)
    assert "Multipliers: fabric" in notes and "yosys" in notes and "-nodsp" in notes
    # the C-synthesis models were fitted on designs where the tool chose: they judge no fabric layer
    assert not after.csynth and all("rule" in v.source for v in after.fit_verdicts())


def test_a_layer_of_its_own_is_bound_alone(model, tmp_path):
    exported = _export(model, tmp_path / "prj", "Vitis", {"LayerName": {"fc": {"Multipliers": "fabric"}}})
    classes = _classes(exported.path)
    assert "impl=fabric" in classes["fc"] and "impl=fabric" not in classes["conv2"]
    layers = {layer.name: layer.pruned for layer in fp.estimate(exported).layers}
    assert layers["fc"].dsp == 0 and layers["conv2"].dsp > 0


def test_catapult_refuses_fabric_in_one_line_naming_the_layer(model, tmp_path):
    with pytest.raises(HlsConfigError, match=r"Multipliers: fabric \(conv1\) is not written for Catapult") as error:
        _export(model, tmp_path / "prj", "Catapult", dsp_free_overrides())
    assert "\n" not in str(error.value)


def test_an_unknown_choice_is_one_line(model, tmp_path):
    with pytest.raises(HlsConfigError, match=r"Multipliers of fc: found 'lut'; expected one of auto, fabric"):
        _export(model, tmp_path / "prj", "Vitis", {"LayerName": {"fc": {"Multipliers": "lut"}}})


@pytest.mark.parametrize("seed", range(3))
def test_no_product_is_a_dsp_in_fabric(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        weight_bits, input_bits = int(rng.integers(2, 28)), int(rng.integers(2, 28))
        code = int(rng.integers(-(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1)))
        auto = rules.product_kind(code, weight_bits, input_bits)
        fabric = rules.product_kind(code, weight_bits, input_bits, fabric=True)
        assert fabric == ("lut" if auto == "dsp" else auto)


@pytest.mark.parametrize("code,weight_bits,input_bits", [(-1437, 12, 16), (45, 8, 12), (-93, 8, 8)])
def test_the_lut_product_rule_holds_its_stated_error_against_yosys(code, weight_bits, input_bits):
    measured = measure_product(code, weight_bits, input_bits)["luts"]
    priced = rules.fabric_multiplier_luts(code, weight_bits, input_bits)
    low, high = rules.FABRIC_RULE_ERROR
    assert low <= priced / measured - 1 <= high, (priced, measured)
    assert re.search(r"-nodsp", rules.FABRIC_RULE_SOURCE)


@pytest.mark.csim
def test_a_fabric_export_is_bit_exact_in_csim(model, tmp_path):
    """Binding the products changes where they are built, not what they compute."""
    exported = _export(model, tmp_path / "prj", "Vitis", dsp_free_overrides())
    check = fp.csim(exported, model, X8)
    assert check.bit_exact, check.first_difference
