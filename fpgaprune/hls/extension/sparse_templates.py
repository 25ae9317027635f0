"""The templates of kernel-sparse layers that every backend shares: which nodes they match, and the calls.

- Dense calls `nnet::fpgaprune_sparse_dense` (array and stream overloads in the backend's header);
- io_stream convolutions call `nnet::fpgaprune_sparse_conv{1,2}d_stream`, a line buffer whose multiplication
  is the layer's generated kernel;
- io_parallel convolutions call `nnet::fpgaprune_sparse_conv_cl`.

A template matches a node that the pass made sparse and whose kind's `sparse_code` (`layer_kinds.py`) is its
own: the pass and the templates read the same field, so a kind is either trimmed and called sparse, or left
whole to hls4ml's stock code. CODES lists the codes these templates write; the pass trims no other. A backend
gives its config templates (`vivado/templates.py`, `catapult/templates.py`): what a config holds differs.
"""

import re

from hls4ml.backends.backend import get_backend
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.model import layers as hls_layers

from fpgaprune.hls.attribute_keys import PLAN
from fpgaprune.hls.extension.sparse_kernels import is_sparse
from fpgaprune.model.layer_kinds import KINDS, kind_of_node

CODES = ("dense", "conv")
SPARSE_HEADER = "nnet_utils/nnet_fpgaprune_sparse.h"
DENSE_CALL = "nnet::fpgaprune_sparse_dense<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
STREAM_CONV_CALL = (
    "nnet::fpgaprune_sparse_conv{dim}d_stream<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
)
PARALLEL_CONV_CALL = "nnet::fpgaprune_sparse_conv_cl<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
STOCK_MULTIPLIER_LIMIT = "multiplier_limit = DIV_ROUNDUP(n_in * n_out, reuse_factor) - n_zeros / reuse_factor;"

PARALLEL_CONV_CONFIG = """struct config{index}_mult : nnet::dense_config {{
    static const unsigned n_in = {n_in};
    static const unsigned n_out = {n_filt};
    static const unsigned n_live = {n_live};
    static const unsigned reuse_factor = {reuse};
    static const unsigned strategy = nnet::{strategy};
    static const unsigned n_zeros = 0;
    static const unsigned multiplier_limit = DIV_ROUNDUP(n_live, reuse_factor);
    typedef {accum_t.name} accum_t;
    typedef {bias_t.name} bias_t;
    typedef {weight_t.name} weight_t;
{kernel}
    template<class x_T, class y_T>
    using product = nnet::product::{product_type}<x_T, y_T>;
}};

struct config{index} {{
    static const unsigned in_height = {in_height};
    static const unsigned in_width = {in_width};
    static const unsigned n_chan = {n_chan};
    static const unsigned filt_height = {filt_height};
    static const unsigned filt_width = {filt_width};
    static const unsigned n_filt = {n_filt};
    static const unsigned stride_height = {stride_height};
    static const unsigned stride_width = {stride_width};
    static const unsigned pad_top = {pad_top};
    static const unsigned pad_left = {pad_left};
    static const unsigned out_height = {out_height};
    static const unsigned out_width = {out_width};
    static const unsigned reuse_factor = {reuse};
    typedef {accum_t.name} accum_t;
    typedef {bias_t.name} bias_t;
    typedef {weight_t.name} weight_t;
    typedef config{index}_mult mult_config;
}};
"""


def node_classes(code: str) -> tuple:
    """The hls4ml layer classes of the kinds whose kernel-sparse code is `code`."""
    return tuple(getattr(hls_layers, name) for kind in KINDS if kind.sparse_code == code for name in kind.hls4ml_nodes)


def sparse(node, code: str, io_type: str | None = None) -> bool:
    """Made sparse by the pass, of a kind whose code is `code` (and in `io_type`, when given)."""
    kind = kind_of_node(node)
    return (
        is_sparse(node)
        and kind is not None
        and kind.sparse_code == code
        and (io_type is None or node.model.config.get_config_value("IOType") == io_type)
    )


def conv_dim(node) -> int:
    return 1 if kind_of_node(node).name == "Conv1D" else 2


def replace_multiplier_limit(text: str, node, kernel: str) -> str:
    """hls4ml's own config text with its one multiplier limit replaced by the live weights' and `kernel` (the
    backend's lines that name the layer's generated product code) after it."""
    plan = node.get_attr(PLAN)
    lines = f"n_live = {plan.n_live};\n    static const unsigned multiplier_limit = DIV_ROUNDUP(n_live, reuse_factor);"
    text, limits = re.subn(re.escape(STOCK_MULTIPLIER_LIMIT), lambda _: lines + ("\n" + kernel if kernel else ""), text)
    if limits != 1:
        raise changed_shape(node)
    return text


def changed_shape(node) -> RuntimeError:
    return RuntimeError(
        f"fpgaprune: hls4ml's config template for {node.name} changed shape; this fpgaprune supports hls4ml 1.3.0"
    )


class StockConfig(LayerConfigTemplate):
    """A layer's config as the backend's stock template writes it (`stock_classes`: Dense's, or Conv1D's and
    Conv2D's), then pointed at the layer's generated code by the backend's `point_at`."""

    code, io_type, what = "", None, ""
    stock_classes: tuple = ()

    def __init__(self):
        super().__init__(node_classes(self.code))
        self.name = f"fpgaprune_sparse_{self.what}_config_template"
        self.stock = [stock() for stock in self.stock_classes]

    @staticmethod
    def point_at(text: str, node) -> str:
        """The stock text rewritten to name the layer's generated code. Abstract: each backend's says how."""
        raise NotImplementedError

    def match(self, node):
        return sparse(node, self.code, self.io_type)

    def format(self, node):
        stock = self.stock[0] if len(self.stock) == 1 else self.stock[conv_dim(node) - 1]
        return self.point_at(stock.format(node), node)


class ParallelConvConfig(LayerConfigTemplate):
    """io_parallel Conv1D/Conv2D: the config of `nnet::fpgaprune_sparse_conv_cl`; `kernel` gives the backend's
    lines that name the generated product code in the multiplication config."""

    backend = ""  # the hls4ml backend whose product types the multiplication uses

    def __init__(self):
        super().__init__(node_classes("conv"))
        self.name = "fpgaprune_sparse_parallel_conv_config_template"

    def kernel(self, node) -> str:
        """The lines naming the layer's generated code. Abstract: each backend's subclass gives its own."""
        raise NotImplementedError

    def match(self, node):
        return sparse(node, "conv", "io_parallel")

    def format(self, node):
        params = self._default_config_params(node)
        plan = node.get_attr(PLAN)
        if conv_dim(node) == 1:
            params.update(in_height=1, filt_height=1, stride_height=1, pad_top=0, out_height=1)
        params.update(n_in=plan.n_in, n_live=plan.n_live, strategy=str(node.get_attr("strategy")).lower())
        params["kernel"] = self.kernel(node)
        params["product_type"] = get_backend(self.backend).product_type(
            node.get_input_variable().type.precision, node.get_weights("weight").type.precision
        )
        return PARALLEL_CONV_CONFIG.format(**params)


class SparseCall(FunctionCallTemplate):
    """The call of a sparse layer's function (`call`), for nodes of `code` (in `io_type`, when given)."""

    call, code, io_type, what = "", "", None, ""

    def __init__(self):
        super().__init__(node_classes(self.code), include_header=[SPARSE_HEADER])
        self.name = f"fpgaprune_sparse_{self.what}_function_template"

    def match(self, node):
        return sparse(node, self.code, self.io_type)

    def format(self, node):
        params = self._default_function_params(node)
        params["w"], params["b"] = node.get_weights("weight").name, node.get_weights("bias").name
        params["dim"] = conv_dim(node)
        return self.call.format(**params)


class SparseDenseFunctionTemplate(SparseCall):
    """Dense (io_parallel, io_stream): call `nnet::fpgaprune_sparse_dense`."""

    call, code, what = DENSE_CALL, "dense", "dense"


class SparseParallelConvFunctionTemplate(SparseCall):
    """io_parallel Conv1D/Conv2D: call `nnet::fpgaprune_sparse_conv_cl`."""

    call, code, io_type, what = PARALLEL_CONV_CALL, "conv", "io_parallel", "parallel_conv"


class SparseStreamConvFunctionTemplate(SparseCall):
    """io_stream Conv1D/Conv2D: call `nnet::fpgaprune_sparse_conv{1,2}d_stream`."""

    call, code, io_type, what = STREAM_CONV_CALL, "conv", "io_stream", "stream_conv"
