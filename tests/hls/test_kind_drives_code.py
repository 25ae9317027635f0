"""The layer table's `sparse_code` drives both the weight-trimming pass and the backend's templates: a kind
marked kernel-sparse gets fpgaprune's sparse C++ and its live weights only; a kind not marked keeps hls4ml's
stock C++ and all its weights, so the two can never disagree."""

import dataclasses
import re

import pytest
from hls_helpers import X8, digits_cnn, trained

import fpgaprune as fp
from fpgaprune.model import layer_kinds

X = X8[:20]
FC_WEIGHTS = 6 * 6 * 6 * 10  # fc: Flatten(6x6x6) -> 10


@pytest.fixture(scope="module")
def model():
    return trained(digits_cnn(), ["conv2[:, :, 1, :]", "fc[:50, 3]", "fc[100:, :]"], None, epochs=0)


def _fc_header_sizes(project) -> set:
    return {
        int(size)
        for header in (project / "firmware" / "weights").glob("w*.h")
        for size in re.findall(r"\bw\d+\[(\d+)\]", header.read_text())
    }


def test_a_kernel_sparse_kind_gets_sparse_code_and_its_live_weights(model, tmp_path):
    exported = fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "sparse", x=X)
    code = (tmp_path / "sparse" / "firmware" / "myproject.cpp").read_text()
    assert "nnet::fpgaprune_sparse_dense" in code
    held_live = FC_WEIGHTS - 50 - 116 * 10  # fewer still once quantized
    sizes = _fc_header_sizes(tmp_path / "sparse")
    assert FC_WEIGHTS not in sizes and any(300 < size <= held_live for size in sizes)
    assert exported.manifest


def test_a_kind_not_marked_keeps_stock_code_and_all_its_weights(model, tmp_path, monkeypatch):
    dense = layer_kinds.BY_HLS4ML_NODE["Dense"]
    monkeypatch.setitem(layer_kinds.BY_HLS4ML_NODE, "Dense", dataclasses.replace(dense, sparse_code=""))
    fp.export(model, "latency_parallel", "pynq-z2", tmp_path / "stock", x=X)
    code = (tmp_path / "stock" / "firmware" / "myproject.cpp").read_text()
    assert "fpgaprune_sparse_dense" not in code and "nnet::dense<" in code
    assert FC_WEIGHTS in _fc_header_sizes(tmp_path / "stock")
    assert code.count("nnet::fpgaprune_sparse_conv_cl") == 2  # the conv kind stays sparse
