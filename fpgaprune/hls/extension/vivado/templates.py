"""The Vivado/Vitis templates of kernel-sparse layers: they point each layer at its generated product class.

- Dense calls `nnet::fpgaprune_sparse_dense` (Vitis' stream Dense calls hls4ml's latency/resource
  functions directly, not the config's kernel, so its call has to be replaced);
- io_stream convolutions call `nnet::fpgaprune_sparse_conv{1,2}d_stream`, hls4ml's line buffer with
  the generated class as the `kernel` of their multiplication config;
- io_parallel convolutions call `nnet::fpgaprune_sparse_conv_cl` (hls4ml's Latency conv computes its
  products inline, so its call has to be replaced).

A template matches a node that the pass made sparse and whose kind's `sparse_code` (`layer_kinds.py`) is its
own: the pass and the templates read the same field, so a kind is either trimmed and called sparse, or left
whole to hls4ml's stock code. CODES lists the codes these templates write; the pass trims no other.
"""

import re

from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.backends.vivado.passes.convolution_templates import Conv1DConfigTemplate, Conv2DConfigTemplate
from hls4ml.backends.vivado.passes.core_templates import DenseConfigTemplate
from hls4ml.model import layers as hls_layers

from fpgaprune.hls.attribute_keys import PLAN
from fpgaprune.hls.extension.sparse_kernels import is_sparse
from fpgaprune.hls.extension.vivado.sparse_cpp import (
    DENSE_CALL,
    PARALLEL_CONV_CALL,
    PARALLEL_CONV_CONFIG,
    PRODUCT_CLASS,
    SPARSE_HEADER,
    STREAM_CONV_CALL,
)
from fpgaprune.layer_kinds import KINDS, kind_of_node

CODES = ("dense", "conv")


def _node_classes(code: str) -> tuple:
    """The hls4ml layer classes of the kinds whose kernel-sparse code is `code`."""
    return tuple(getattr(hls_layers, name) for kind in KINDS if kind.sparse_code == code for name in kind.hls4ml_nodes)


def _sparse(node, code: str, io_type: str | None = None) -> bool:
    """Made sparse by the pass, of a kind whose code is `code` (and in `io_type`, when given)."""
    kind = kind_of_node(node)
    return (
        is_sparse(node)
        and kind is not None
        and kind.sparse_code == code
        and (io_type is None or node.model.config.get_config_value("IOType") == io_type)
    )


def _dim(node) -> int:
    return 1 if kind_of_node(node).name == "Conv1D" else 2


def _point_at_sparse_kernel(text: str, node) -> str:
    """hls4ml's own config text, with its multiplication kernel replaced by the generated class."""
    plan = node.get_attr(PLAN)
    kernel = f"using kernel = nnet::{PRODUCT_CLASS.format(index=node.index)}<data_T, res_T, CONFIG_T>;"
    text, kernels = re.subn(r"\busing kernel = [\w:]+<data_T, res_T, CONFIG_T>;", kernel, text)
    limit = "multiplier_limit = DIV_ROUNDUP(n_in * n_out, reuse_factor) - n_zeros / reuse_factor;"
    text, limits = re.subn(
        re.escape(limit),
        f"n_live = {plan.n_live};\n    static const unsigned multiplier_limit = DIV_ROUNDUP(n_live, reuse_factor);",
        text,
    )
    if kernels != 1 or limits != 1:
        raise RuntimeError(
            f"fpgaprune: hls4ml's config template for {node.name} changed shape; this fpgaprune supports hls4ml 1.3.0"
        )
    return text


class SparseDenseConfigTemplate(LayerConfigTemplate):
    """Dense (io_parallel, io_stream): hls4ml's config, kernel = the generated class."""

    def __init__(self):
        super().__init__(_node_classes("dense"))
        self.name = "fpgaprune_sparse_dense_config_template"
        self.stock = DenseConfigTemplate()

    def match(self, node):
        return _sparse(node, "dense")

    def format(self, node):
        return _point_at_sparse_kernel(self.stock.format(node), node)


class SparseStreamConvConfigTemplate(LayerConfigTemplate):
    """io_stream Conv1D/Conv2D: hls4ml's line-buffer convolution, kernel = the generated class."""

    def __init__(self):
        super().__init__(_node_classes("conv"))
        self.name = "fpgaprune_sparse_stream_conv_config_template"
        self.stock = {1: Conv1DConfigTemplate(), 2: Conv2DConfigTemplate()}

    def match(self, node):
        return _sparse(node, "conv", "io_stream")

    def format(self, node):
        stock = self.stock[_dim(node)]
        return _point_at_sparse_kernel(stock.format(node), node)


def _parallel_conv_params(template, node) -> dict:
    params = template._default_config_params(node)
    plan = node.get_attr(PLAN)
    if _dim(node) == 1:
        params.update(in_height=1, filt_height=1, stride_height=1, pad_top=0, out_height=1)
    params.update(
        n_in=plan.n_in,
        n_live=plan.n_live,
        product_class=PRODUCT_CLASS.format(index=node.index),
        strategy=str(node.get_attr("strategy")).lower(),
        namespace=params["namespace"] or "nnet",
    )
    from hls4ml.backends.backend import get_backend

    params["product_type"] = get_backend("vivado").product_type(
        node.get_input_variable().type.precision, node.get_weights("weight").type.precision
    )
    return params


class SparseParallelConvConfigTemplate(LayerConfigTemplate):
    """io_parallel Conv1D/Conv2D: the config of `nnet::fpgaprune_sparse_conv_cl`."""

    def __init__(self):
        super().__init__(_node_classes("conv"))
        self.name = "fpgaprune_sparse_parallel_conv_config_template"

    def match(self, node):
        return _sparse(node, "conv", "io_parallel")

    def format(self, node):
        return PARALLEL_CONV_CONFIG.format(**_parallel_conv_params(self, node))


class _SparseCall(FunctionCallTemplate):
    call = ""

    def format(self, node):
        params = self._default_function_params(node)
        params["w"], params["b"] = node.get_weights("weight").name, node.get_weights("bias").name
        params["dim"] = _dim(node)
        return self.call.format(**params)


class SparseDenseFunctionTemplate(_SparseCall):
    """Dense (io_parallel, io_stream): call `nnet::fpgaprune_sparse_dense`."""

    call = DENSE_CALL

    def __init__(self):
        super().__init__(_node_classes("dense"), include_header=[SPARSE_HEADER])
        self.name = "fpgaprune_sparse_dense_function_template"

    def match(self, node):
        return _sparse(node, "dense")


class SparseParallelConvFunctionTemplate(_SparseCall):
    """io_parallel Conv1D/Conv2D: call `nnet::fpgaprune_sparse_conv_cl`."""

    call = PARALLEL_CONV_CALL

    def __init__(self):
        super().__init__(_node_classes("conv"), include_header=[SPARSE_HEADER])
        self.name = "fpgaprune_sparse_parallel_conv_function_template"

    def match(self, node):
        return _sparse(node, "conv", "io_parallel")


class SparseStreamConvFunctionTemplate(_SparseCall):
    """io_stream Conv1D/Conv2D: call `nnet::fpgaprune_sparse_conv{1,2}d_stream`."""

    call = STREAM_CONV_CALL

    def __init__(self):
        super().__init__(_node_classes("conv"), include_header=[SPARSE_HEADER])
        self.name = "fpgaprune_sparse_stream_conv_function_template"

    def match(self, node):
        return _sparse(node, "conv", "io_stream")


TEMPLATES = (
    SparseDenseConfigTemplate,
    SparseDenseFunctionTemplate,
    SparseStreamConvConfigTemplate,
    SparseStreamConvFunctionTemplate,
    SparseParallelConvConfigTemplate,
    SparseParallelConvFunctionTemplate,
)
