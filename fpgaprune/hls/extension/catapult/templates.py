"""Catapult's config templates of kernel-sparse layers: hls4ml's own Catapult configs (a streaming convolution's
included), their multiplication config pointed at the layer's live table and `nnet::fpgaprune_sparse_kernel`.

Catapult's Dense and streaming convolutions call `dense_latency`/`dense_resource` themselves (its configs have
no `kernel` hook), so every call is replaced (`sparse_templates.py`) and the header brings the functions.
"""

from hls4ml.backends.catapult.passes.convolution_templates import Conv1DConfigTemplate, Conv2DConfigTemplate
from hls4ml.backends.catapult.passes.core_templates import DenseConfigTemplate

from fpgaprune.hls.extension.catapult.sparse_cpp import kernel_lines
from fpgaprune.hls.extension.sparse_templates import (
    CODES,
    ParallelConvConfig,
    SparseDenseFunctionTemplate,
    SparseParallelConvFunctionTemplate,
    SparseStreamConvFunctionTemplate,
    StockConfig,
    replace_multiplier_limit,
)

__all__ = ["CODES", "TEMPLATES"]


def _point_at_table(text: str, node) -> str:
    """hls4ml's Catapult config text, its multiplication config given the layer's table and the sparse kernel."""
    return replace_multiplier_limit(text, node, kernel_lines(node.index))


class SparseDenseConfigTemplate(StockConfig):
    """Dense (io_parallel, io_stream): hls4ml's Catapult config, with the layer's table and kernel."""

    code, what, stock_classes = "dense", "dense", (DenseConfigTemplate,)
    point_at = staticmethod(_point_at_table)


class SparseStreamConvConfigTemplate(StockConfig):
    """io_stream Conv1D/Conv2D: hls4ml's Catapult config (line buffer), its multiplication config sparse."""

    code, io_type, what = "conv", "io_stream", "stream_conv"
    stock_classes = (Conv1DConfigTemplate, Conv2DConfigTemplate)
    point_at = staticmethod(_point_at_table)


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
