"""Kernel-sparse code generation, checked on the written project (no compiler needed here)."""

import re

import numpy as np
import pytest
from hls_helpers import (
    RNG_X,
    L,
    digits_cnn,
    header_entries,
    live_weights,
    product_sites,
    random_model,
    top_calls,
    trained,
    written,
)

import fpgaprune as fp
from fpgaprune.hls import convert_model, export_config
from fpgaprune.hls.manifest import quantized_kernel
from fpgaprune.record import record_of, resolved
from fpgaprune.strip import strip
from fpgaprune.tfk import keras

CASES = [
    (kind, io, strategy, seed)
    for seed, (kind, io, strategy) in enumerate(
        [
            (k, io, s)
            for k in ("dense", "conv1d", "conv2d")
            for io in ("io_parallel", "io_stream")
            for s in ("Latency", "Resource")
        ]
    )
]


@pytest.mark.parametrize("kind,io_type,strategy,seed", CASES)
def test_headers_and_sites_hold_exactly_the_live_weights(tmp_path, kind, io_type, strategy, seed):
    model = random_model(kind, seed)
    hls_model = written(model, tmp_path, io_type, strategy, reuse=2 if strategy == "Resource" else 1)
    project, live = hls_model.config.get_output_dir(), live_weights(model)
    sites = product_sites(project)
    for node in hls_model.get_layers():
        if node.name in live:
            assert header_entries(project, node.get_weights("weight").name) == live[node.name], node.name
            assert sites[node.name] == live[node.name], node.name
    assert set(sites) == set(live)


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
@pytest.mark.parametrize("backend", ["Vivado", "Vitis"])
def test_top_function_calls_the_generated_kernels(tmp_path, io_type, backend):
    model = trained(digits_cnn(), ["conv2[:, :, 1, :]"], None, epochs=0)
    calls = top_calls(written(model, tmp_path, io_type, backend=backend).config.get_output_dir())
    conv = "nnet::fpgaprune_sparse_conv_cl" if io_type == "io_parallel" else "nnet::fpgaprune_sparse_conv2d_stream"
    assert calls["conv1"] == calls["conv2"] == conv
    assert calls["fc"] == "nnet::fpgaprune_sparse_dense"
    stock = top_calls(written(model, tmp_path, io_type, backend=backend, sparse=False).config.get_output_dir())
    assert stock["conv2"] in ("nnet::conv_2d_cl", "nnet::conv_2d_latency_cl") and stock["fc"] == "nnet::dense"


def test_registration_is_idempotent():
    from hls4ml.model.flow import get_flow

    from fpgaprune.hls.extension import register

    register()
    register()
    flow = get_flow("vivado:specific_types").optimizers
    assert flow.count("vivado:fpgaprune_sparse_kernels") == 1


def test_one_pruned_kernel_removes_exactly_its_products(tmp_path):
    """The original question: conv2[:, :, 29, 13] of a [3,3,32,32] layer."""

    def build():
        keras.utils.set_random_seed(3)
        model = keras.Sequential(
            [
                keras.Input((8, 8, 1)),
                L.Conv2D(32, 3, padding="same", name="conv1"),
                L.ReLU(name="relu1"),
                L.Conv2D(32, 3, name="conv2"),
                L.ReLU(name="relu2"),
                L.GlobalAveragePooling2D(name="gap"),
                L.Dense(10, name="fc"),
            ]
        )
        kernel, bias = model.get_layer("conv2").get_weights()
        kernel[:, :, 29, 13] = np.linspace(-0.5, 0.5, 10)[[0, 1, 2, 3, 4, 6, 7, 8, 9]].reshape(3, 3)
        model.get_layer("conv2").set_weights([kernel, bias])
        return model

    spec = {
        "default": {
            "kernel": "quantized_bits(8,0,alpha=1)",
            "bias": "quantized_bits(8,3,alpha=1)",
            "activation": "quantized_relu(8,2)",
        }
    }
    dense_model = trained(build(), [], None, epochs=0, spec=spec)
    pruned_model = trained(build(), ["conv2[:, :, 29, 13]"], None, epochs=0, spec=spec)
    kernel = quantized_kernel(record_of(dense_model).layers["conv2"])
    assert kernel.shape == (3, 3, 32, 32)
    expected = int(np.count_nonzero(kernel[:, :, 29, 13]))
    assert expected == 9  # none of its weights was already zero
    dense_sites = product_sites(written(dense_model, tmp_path / "d", "io_parallel").config.get_output_dir())
    pruned = written(pruned_model, tmp_path / "p", "io_parallel")
    pruned_sites = product_sites(pruned.config.get_output_dir())
    assert dense_sites["conv2"] - pruned_sites["conv2"] == expected
    assert dense_sites["conv1"] == pruned_sites["conv1"] and dense_sites["fc"] == pruned_sites["fc"]
    code = pruned.config.get_output_dir() + "/firmware/nnet_utils/nnet_code_gen.h"
    text = open(code).read()
    kept = re.search(r"conv2\[:, :, ci, 13\]: kernels kept for ci in \{([^}]*)\}", text).group(1)
    assert 29 not in [int(c) for c in kept.split(",")] and 28 in [int(c) for c in kept.split(",")]


def test_stripped_channels_do_not_exist_and_comments_use_original_indices(tmp_path):
    model = digits_cnn(padding="valid")
    held = fp.hold(model, prune=["conv1[..., 2]"])  # conv1's output channel 2 dies
    result = strip(held)
    quantized = trained(result.model, [], None, epochs=0)
    config, _, _ = export_config(resolved(quantized), "latency_parallel", RNG_X, index_map=result.index_map)
    hls_model = convert_model(resolved(quantized), config, tmp_path / "prj", io_type="io_parallel", backend="Vitis")
    hls_model.write()
    text = open(hls_model.config.get_output_dir() + "/firmware/nnet_utils/nnet_code_gen.h").read()
    assert list(result.index_map["conv1"]["out"]) == [0, 1, 3]
    assert "conv1[:, :, ci, 3]" in text and "conv1[:, :, ci, 2]" not in text  # output 2 is the original 3
    kept = [
        {int(c) for c in group.split(",")}
        for group in re.findall(r"conv2\[:, :, ci, \d+\]: kernels kept for ci in \{([^}]*)\}", text)
    ]
    assert kept and any(3 in inputs for inputs in kept)  # its input 2 is the original 3
    assert not any(2 in inputs for inputs in kept)  # the original input 2 is gone
    sites = product_sites(hls_model.config.get_output_dir())
    assert sites["conv1"] == np.count_nonzero(quantized_kernel(record_of(quantized).layers["conv1"]))


def test_other_maskable_layers_keep_stock_code_and_say_so(tmp_path):
    from hls_helpers import SPEC8

    from fpgaprune.quantize import to_qkeras

    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            L.Conv2D(4, 3, name="conv1"),
            L.ReLU(name="r"),
            L.DepthwiseConv2D(3, name="dw"),
            L.Flatten(name="f"),
            L.Dense(3, name="fc"),
        ]
    )
    quantized = to_qkeras(fp.hold(model, prune=["dw[..., 1, 0]"]), SPEC8)
    result = fp.export(quantized, "latency_stream", "pynq-z2", tmp_path / "prj", x=RNG_X)
    codes = {name: node["code"] for name, node in result.manifest["hls_nodes"].items()}
    assert codes["dw"].startswith("hls4ml stock code: zeros left to the HLS compiler")
    assert codes["conv1"].startswith("kernel-sparse") and codes["fc"].startswith("kernel-sparse")
    assert "zeros left to the HLS compiler" in result.summary()


def test_a_dead_output_is_its_bias_with_no_arithmetic(tmp_path):
    model = trained(digits_cnn(padding="valid"), ["fc[:, 2]", "conv2[..., 4]"], None, epochs=0)
    project = written(model, tmp_path, "io_parallel").config.get_output_dir()
    text = open(project + "/firmware/nnet_utils/nnet_code_gen.h").read()
    for layer, output in (("fc", 2), ("conv2", 4)):
        table = text.split(f"product of {layer} ")[1].split("};", 1)[0]
        assert f"output {output} = {layer}[..., {output}]: every kernel pruned, the constant bias" in table
        assert not re.search(rf"\{{\d+, {output}\}}", table)  # no product reaches it: acc starts at the bias


def test_qkeras_conv2d_batchnorm_nodes_are_kernel_sparse(tmp_path):
    import qkeras

    keras.utils.set_random_seed(0)
    quantizer, bias = "quantized_bits(6,0,alpha=1)", "quantized_bits(8,3,alpha=1)"
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            qkeras.QConv2DBatchnorm(4, 3, kernel_quantizer=quantizer, bias_quantizer=bias, name="cbn"),
            qkeras.QActivation("quantized_relu(6,2)", name="r"),
            L.Flatten(name="f"),
            qkeras.QDense(3, kernel_quantizer=quantizer, bias_quantizer=bias, name="fc"),
        ]
    )
    weights = model.get_layer("cbn").get_weights()
    weights[0][:, :, 0, 1] = 0
    model.get_layer("cbn").set_weights(weights)
    hls_model = written(model, tmp_path, "io_parallel")
    assert hls_model.graph["cbn"].class_name == "Conv2DBatchnorm"
    sites = product_sites(hls_model.config.get_output_dir())
    layer = model.get_layer("cbn")
    folded_kernel = layer.get_folded_weights()[0]
    expected = int(np.count_nonzero(layer.kernel_quantizer_internal(folded_kernel).numpy()))
    assert sites["cbn"] == expected and expected <= 27  # kernel (0, 1) stays out after folding
