"""Catapult's config templates of kernel-sparse layers: hls4ml's own Catapult configs (a streaming convolution's
included), their multiplication config pointed at the layer's live table and `nnet::fpgaprune_sparse_kernel`.

Catapult's Dense and streaming convolutions call `dense_latency`/`dense_resource` themselves (its configs have
no `kernel` hook), so every call is replaced (`sparse_templates.py`) and the header brings the functions.
"""

from hls4ml.backends.catapult.passes.convolution_templates import Conv1DConfigTemplate, Conv2DConfigTemplate
from hls4ml.backends.catapult.passes.core_templates import DenseConfigTemplate
from hls4ml.backends.template import LayerConfigTemplate

from fpgaprune.hls.extension.catapult.sparse_cpp import kernel_lines
from fpgaprune.hls.extension.sparse_templates import (
    CODES,
    ParallelConvConfig,
    SparseDenseFunctionTemplate,
    SparseParallelConvFunctionTemplate,
    SparseStreamConvFunctionTemplate,
    conv_dim,
    node_classes,
    replace_multiplier_limit,
    sparse,
)

__all__ = ["CODES", "TEMPLATES"]


class SparseDenseConfigTemplate(LayerConfigTemplate):
    """Dense (io_parallel, io_stream): hls4ml's Catapult config, with the layer's table and kernel."""

    def __init__(self):
        super().__init__(node_classes("dense"))
        self.name = "fpgaprune_sparse_dense_config_template"
        self.stock = DenseConfigTemplate()

    def match(self, node):
        return sparse(node, "dense")

    def format(self, node):
        return replace_multiplier_limit(self.stock.format(node), node, kernel_lines(node.index))


class SparseStreamConvConfigTemplate(LayerConfigTemplate):
    """io_stream Conv1D/Conv2D: hls4ml's Catapult config (line buffer), its multiplication config sparse."""

    def __init__(self):
        super().__init__(node_classes("conv"))
        self.name = "fpgaprune_sparse_stream_conv_config_template"
        self.stock = {1: Conv1DConfigTemplate(), 2: Conv2DConfigTemplate()}

    def match(self, node):
        return sparse(node, "conv", "io_stream")

    def format(self, node):
        return replace_multiplier_limit(self.stock[conv_dim(node)].format(node), node, kernel_lines(node.index))


class SparseParallelConvConfigTemplate(ParallelConvConfig):
    """io_parallel Conv1D/Conv2D: the config of `nnet::fpgaprune_sparse_conv_cl`, with the layer's table."""

    backend = "catapult"

    def kernel(self, node) -> str:
        return kernel_lines(node.index)


TEMPLATES = (
    SparseDenseConfigTemplate,
    SparseDenseFunctionTemplate,
    SparseStreamConvConfigTemplate,
    SparseStreamConvFunctionTemplate,
    SparseParallelConvConfigTemplate,
    SparseParallelConvFunctionTemplate,
)
