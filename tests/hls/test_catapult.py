"""Catapult, kernel-sparse: hls4ml 1.3's Catapult backend with one product per live weight, built with g++ against
the ac_types hls4ml's wheel ships, bit-exact against the quantized model, its products counted by the instrumented
C-sim, checked as the Vivado family's is (`test_sparse_codegen.py`, `test_export_csim.py`) over models, seeds,
strategies and io types. Catapult itself is not here: its synthesis is skipped, saying so, and its figures are
the rules' (`tests/resources/test_fit_verdict_backends.py`)."""

import numpy as np
import pytest
import qkeras
from hls_helpers import RNG_X, L, digits_cnn, live_weights, output_positions, random_model, top_calls, trained, written

import fpgaprune as fp
from fpgaprune.errors import ExportError
from fpgaprune.hls import count_products
from fpgaprune.hls.attribute_keys import PLAN
from fpgaprune.hls.csim import csim_check
from fpgaprune.quantize.fixed_types import input_type
from fpgaprune.record import resolved
from fpgaprune.tfk import keras

BITS = "quantized_bits(6,0,alpha=1)"

CASES = [
    (kind, io_type, strategy, seed)
    for seed, (kind, io_type, strategy) in enumerate(
        [
            ("dense", "io_parallel", "Latency"),
            ("dense", "io_stream", "Resource"),
            ("conv1d", "io_parallel", "Resource"),
            ("conv1d", "io_stream", "Latency"),
            ("conv2d", "io_parallel", "Latency"),
            ("conv2d", "io_stream", "Resource"),
        ]
    )
]


@pytest.mark.csim
@pytest.mark.parametrize("kind,io_type,strategy,seed", CASES)
def test_catapult_is_bit_exact_and_runs_one_product_per_live_weight(tmp_path, kind, io_type, strategy, seed):
    model = random_model(kind, seed)
    hls_model = written(
        model, tmp_path, io_type, strategy, reuse=2 if strategy == "Resource" else 1, backend="Catapult"
    )
    check = csim_check(hls_model, resolved(model), RNG_X, input_type(RNG_X))
    assert check.bit_exact, check.format()
    live = live_weights(model)
    expected = {name: live[name] * output_positions(model.get_layer(name)) for name in live}
    assert count_products(hls_model, RNG_X[:3]) == expected


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_catapult_code_calls_the_sparse_kernels_in_ac_types_with_no_vivado_pragma(tmp_path, io_type):
    model = trained(digits_cnn(), ["conv2[:, :, 1, :]"], None, epochs=0)
    project = written(model, tmp_path, io_type, backend="Catapult").config.get_output_dir()
    calls = top_calls(project)
    conv = "nnet::fpgaprune_sparse_conv_cl" if io_type == "io_parallel" else "nnet::fpgaprune_sparse_conv2d_stream"
    assert calls["conv1"] == calls["conv2"] == conv and calls["fc"] == "nnet::fpgaprune_sparse_dense"
    firmware = f"{project}/firmware"
    generated = open(f"{firmware}/nnet_utils/nnet_code_gen.h").read()
    header = open(f"{firmware}/nnet_utils/nnet_fpgaprune_sparse.h").read()
    for text in (generated, header):
        assert "#pragma HLS" not in text and "ap_fixed" not in text and "hls::stream" not in text
    assert "ac_channel<data_T>" in header and generated.count("struct fpgaprune_live_table_") == 3
    parameters = open(f"{firmware}/parameters.h").read()
    assert parameters.count("using kernel = nnet::fpgaprune_sparse_kernel<data_T, res_T, CONFIG_T>;") == 3
    stock = top_calls(written(model, tmp_path, io_type, backend="Catapult", sparse=False).config.get_output_dir())
    assert stock["conv2"] == "nnet::conv_2d_cl" and stock["fc"] == "nnet::dense"


def test_a_catapult_weight_header_holds_only_the_live_weights(tmp_path):
    model = trained(digits_cnn(), ["conv2[:, :, 1, :]", "fc[10:60, :]"], None, epochs=0)
    hls_model = written(model, tmp_path, "io_parallel", backend="Catapult")
    live = live_weights(model)
    for node in hls_model.get_layers():
        if node.name in live:
            assert np.count_nonzero(node.get_weights("weight").data) == live[node.name] == node.get_attr(PLAN).n_live


@pytest.mark.parametrize("last", ["softmax_layer", "sigmoid_activation"])
def test_an_activation_catapult_computes_unbounded_is_refused_in_one_line(tmp_path, last):
    layers = [keras.Input((16,)), qkeras.QDense(4, kernel_quantizer=BITS, bias_quantizer=BITS, name="fc")]
    layers.append(L.Softmax(name="out") if last == "softmax_layer" else L.Activation("sigmoid", name="out"))
    model = keras.Sequential(layers)
    function = "softmax" if last == "softmax_layer" else "sigmoid"
    x = RNG_X[:4].reshape(4, -1)[:, :16]
    with pytest.raises(ExportError) as refused:
        fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "prj", x=x, backend="Catapult")
    assert str(refused.value).splitlines() == [
        f"layer 'out': Catapult computes {function} by AC Math's piecewise-linear approximation (hls4ml's "
        f"USE_AC_MATH), whose error fpgaprune does not bound, so its C-sim could not be judged; export to Vitis or "
        f"Vivado, or end the model before the {function}"
    ]
    assert not (tmp_path / "prj").exists()
