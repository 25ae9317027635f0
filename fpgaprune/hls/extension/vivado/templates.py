"""The Vivado/Vitis config templates of kernel-sparse layers: hls4ml's own configs, with the layer's generated
product class as their `kernel` (the calls are `sparse_templates.py`'s).

Vitis' stream Dense calls hls4ml's latency/resource functions directly, not the config's kernel, so every Dense
call is replaced; hls4ml's Latency conv computes its products inline, so io_parallel convolutions get their own
config; io_stream convolutions keep hls4ml's line buffer, whose multiplication config's kernel is the class.
"""

import re

from hls4ml.backends.vivado.passes.convolution_templates import Conv1DConfigTemplate, Conv2DConfigTemplate
from hls4ml.backends.vivado.passes.core_templates import DenseConfigTemplate

from fpgaprune.hls.extension.sparse_templates import (
    CODES,
    ParallelConvConfig,
    SparseDenseFunctionTemplate,
    SparseParallelConvFunctionTemplate,
    SparseStreamConvFunctionTemplate,
    StockConfig,
    changed_shape,
    replace_multiplier_limit,
)
from fpgaprune.hls.extension.vivado.sparse_cpp import PRODUCT_CLASS

__all__ = ["CODES", "TEMPLATES"]


def _point_at_sparse_kernel(text: str, node) -> str:
    """hls4ml's own config text, with its multiplication kernel replaced by the generated class."""
    kernel = f"using kernel = nnet::{PRODUCT_CLASS.format(index=node.index)}<data_T, res_T, CONFIG_T>;"
    text, kernels = re.subn(r"\busing kernel = [\w:]+<data_T, res_T, CONFIG_T>;", kernel, text)
    if kernels != 1:
        raise changed_shape(node)
    return replace_multiplier_limit(text, node, "")


class SparseDenseConfigTemplate(StockConfig):
    """Dense (io_parallel, io_stream): hls4ml's config, kernel = the generated class."""

    code, what, stock_classes = "dense", "dense", (DenseConfigTemplate,)
    point_at = staticmethod(_point_at_sparse_kernel)


class SparseStreamConvConfigTemplate(StockConfig):
    """io_stream Conv1D/Conv2D: hls4ml's line-buffer convolution, kernel = the generated class."""

    code, io_type, what = "conv", "io_stream", "stream_conv"
    stock_classes = (Conv1DConfigTemplate, Conv2DConfigTemplate)
    point_at = staticmethod(_point_at_sparse_kernel)


class SparseParallelConvConfigTemplate(ParallelConvConfig):
    """io_parallel Conv1D/Conv2D: the config of `nnet::fpgaprune_sparse_conv_cl`, kernel = the generated class."""

    backend = "vivado"

    def kernel(self, node) -> str:
        namespace = self._default_config_params(node)["namespace"] or "nnet"
        return (
            "    template<class data_T, class res_T, class CONFIG_T>\n"
            f"    using kernel = {namespace}::{PRODUCT_CLASS.format(index=node.index)}<data_T, res_T, CONFIG_T>;"
        )


TEMPLATES = (
    SparseDenseConfigTemplate,
    SparseDenseFunctionTemplate,
    SparseStreamConvConfigTemplate,
    SparseStreamConvFunctionTemplate,
    SparseParallelConvConfigTemplate,
    SparseParallelConvFunctionTemplate,
)
