"""The fit verdict is judged by the export's own backend: a C-synthesis model of Vitis HLS or Vivado HLS judges
only that tool's designs, another backend gets the rules (said so: a kernel-sparse Catapult design), and a design
with a layer that is not estimated (hls4ml's stock code: all of a Catapult design's, or an LSTM or GRU beside
kernel-sparse layers) cannot be judged: its layers are never counted as zero."""

import shutil
from dataclasses import replace

import numpy as np
import pytest
import qkeras

import fpgaprune as fp
from fpgaprune.hls import csynth
from fpgaprune.resources.fit_verdict import CANNOT_JUDGE, DOES_NOT_FIT, FITS, cost_models
from fpgaprune.tfk import keras

BITS = "quantized_bits(6,0,alpha=1)"


@pytest.fixture(scope="module")
def mlp_and_inputs():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            qkeras.QDense(8, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc1"),
            qkeras.QActivation("quantized_relu(6,2)", name="relu1"),
            qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc2"),
        ]
    )
    return model, np.random.default_rng(0).random((20, 16)).astype(np.float32)


@pytest.mark.parametrize(
    "backend, tool", [("Vitis", "Vitis HLS"), ("Vivado", "Vivado HLS"), ("VivadoAccelerator", "Vivado HLS")]
)
def test_a_vendor_backend_is_judged_by_its_own_tool(backend, tool):
    models = cost_models(backend)
    assert models and all(model.tool.startswith(tool) for model in models)


@pytest.mark.parametrize("backend", ["Catapult", "oneAPI", "Quartus"])
def test_another_backend_borrows_no_vendor_model(backend):
    assert cost_models(backend) == ()


def test_a_catapult_design_is_judged_by_the_rules_not_by_vitis_model(mlp_and_inputs, tmp_path):
    model, x = mlp_and_inputs
    vitis = fp.estimate(fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "vitis", x=x))
    checked = {v.resource: v for v in vitis.fit_verdicts()}
    assert checked["LUT"].error is not None and "Vitis HLS" in checked["LUT"].source  # Vitis: its checked model
    catapult = replace(vitis, backend="Catapult")  # the same layers, estimated, on a backend no model knows
    for verdict in catapult.fit_verdicts():
        assert verdict.error is None and verdict.verdict == FITS, verdict.text()
        assert verdict.source == "rule estimate; rules only: no vendor-checked C-synthesis model for Catapult"


def test_a_kernel_sparse_catapult_export_is_estimated_by_the_rules_and_says_so(mlp_and_inputs, tmp_path):
    model, x = mlp_and_inputs
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "catapult", x=x, backend="Catapult")
    estimate = fp.estimate(exported)
    assert [layer.name for layer in estimate.layers] == ["fc1", "fc2"] and estimate.unestimated == []
    for verdict in estimate.fit_verdicts():
        assert verdict.error is None and verdict.verdict == FITS, verdict.text()
        assert verdict.source == "rule estimate; rules only: no vendor-checked C-synthesis model for Catapult"


def test_a_stock_catapult_export_cannot_be_judged(mlp_and_inputs, tmp_path):
    model, x = mlp_and_inputs
    exported = fp.export(
        model, "latency_parallel", "pynq-z2", tmp_path / "catapult", x=x, backend="Catapult", kernel_sparse=False
    )
    estimate = fp.estimate(exported)
    assert estimate.layers == [] and estimate.unestimated == ["fc1", "fc2"]
    assert estimate.verdict() == CANNOT_JUDGE and not estimate.fits()
    for verdict in estimate.fit_verdicts():
        assert verdict.verdict == CANNOT_JUDGE, verdict.text()
        assert "no layer estimated: fc1, fc2 run hls4ml's stock Catapult code" in verdict.text()
    assert "it cannot be judged on" in estimate.format()
    if shutil.which("catapult") is None:  # the backend's own tool, not Vitis': skipped, saying which
        skipped = csynth(exported)
        assert not skipped.ran and skipped.reason == "skipped: catapult not found on PATH"


Q6 = {"default": {"kernel": BITS, "bias": BITS, "activation": "quantized_relu(6,2)"}}


def _stock_beside_sparse():
    """An LSTM beside a kernel-sparse Dense, and a GRU beside a kernel-sparse Conv2D (their QKeras twins)."""
    keras.utils.set_random_seed(0)
    L = keras.layers
    lstm = keras.Sequential([keras.Input((8, 8)), L.LSTM(8, name="lstm"), L.Dense(4, name="fc")])
    gru = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv"),
            L.ReLU(name="relu"),
            L.Reshape((36, 4), name="rows"),
            L.GRU(8, name="gru"),
        ]
    )
    x = np.random.default_rng(0).random((20, 8, 8, 1)).astype(np.float32)
    return {"lstm": (lstm, x[..., 0], "fc"), "gru": (gru, x, "conv")}


@pytest.mark.parametrize("stock", ["lstm", "gru"])
def test_a_design_with_a_stock_layer_beside_kernel_sparse_ones_is_not_said_to_fit(stock, tmp_path):
    model, x, sparse = _stock_beside_sparse()[stock]
    estimate = fp.estimate(
        fp.export(fp.quantized_twin(model, Q6), "latency_parallel", "pynq-z2", tmp_path / "hls", x=x)
    )
    assert [layer.name for layer in estimate.layers] == [sparse] and estimate.unestimated == [stock]
    assert estimate.verdict() == CANNOT_JUDGE and not estimate.fits()  # the estimated layers alone would fit
    for verdict in estimate.fit_verdicts():
        assert verdict.verdict == CANNOT_JUDGE and verdict.fraction < 1, verdict.text()
        assert f"the estimated layers only, a floor: {stock} runs hls4ml's stock Vitis code" in verdict.text()
    assert "it cannot be judged on PYNQ-Z2" in estimate.format()
    tiny = replace(estimate.board, resources={name: 1 for name in estimate.board.resources})
    over = replace(estimate, board=tiny)  # the estimated layers alone exceed the board: that much is known
    assert over.verdict() == DOES_NOT_FIT and not over.fits()
