"""The C++ text of the kernel-sparse code: the generated product class of one layer, and the config templates.

Each layer gets a `static const` table of its live weights, `{input, output}` per live weight, and a product
class whose fully unrolled loop runs over that table: one product per live weight and nothing else. Each
output sums its bias and its own live products; an output with no live weight is its bias. HLS tools
constant-fold the unrolled loop into the same circuit as one statement per product, while g++ compiles a
loop, so the C-sim build costs what stock hls4ml's does whatever the number of weights. Comments beside
the table name every kernel by its index in the user's original layer. C-sim and synthesis read the same
code: there is no `#ifdef` around the arithmetic.
"""

from fpgaprune.hls.extension.live_table import LIVE_TABLE, layer_comment, live_table_source

PRODUCT_CLASS = "fpgaprune_sparse_dense_{index}"

_CLASS_HEAD = """template <class data_T, class res_T, typename CONFIG_T>
class {cls} : public DenseKernel<data_T, res_T, CONFIG_T> {{
  public:
    static typename CONFIG_T::accum_t mul(data_T x, typename CONFIG_T::weight_t w) {{
        #pragma HLS INLINE
        typename CONFIG_T::accum_t prod = static_cast<typename CONFIG_T::accum_t>(
            CONFIG_T::template product<data_T, typename CONFIG_T::weight_t>::product(x, w));{fabric}
        return prod;
    }}

    static void dense(data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_out],
                      typename CONFIG_T::weight_t weights[CONFIG_T::n_live],
                      typename CONFIG_T::bias_t biases[CONFIG_T::n_out]) {{
        #pragma HLS PIPELINE II=CONFIG_T::reuse_factor
        #pragma HLS ALLOCATION operation instances=mul limit=CONFIG_T::multiplier_limit
        #pragma HLS ARRAY_PARTITION variable=biases complete
        typename CONFIG_T::accum_t acc[CONFIG_T::n_out];
        #pragma HLS ARRAY_PARTITION variable=acc complete
    Bias:
        for (unsigned i = 0; i < CONFIG_T::n_out; i++) {{
            #pragma HLS UNROLL
            acc[i] = (typename CONFIG_T::accum_t)biases[i];
        }}
    Product:
        for (unsigned p = 0; p < CONFIG_T::n_live; p++) {{
            #pragma HLS UNROLL
            acc[{table}[p][1]] += mul(data[{table}[p][0]], weights[p]);
        }}
"""

_CLASS_TAIL = """
    Result:
        for (unsigned i = 0; i < CONFIG_T::n_out; i++) {
            #pragma HLS UNROLL
            res[i] = cast<data_T, res_T, CONFIG_T>(acc[i]);
        }
    }
};
"""


# Vitis HLS (2020.2 on) binds an operation by the variable it assigns; Vivado HLS (to 2020.1) by its core
FABRIC_PRAGMAS = {
    "Vitis": "#pragma HLS BIND_OP variable=prod op=mul impl=fabric",
    "Vivado": "#pragma HLS RESOURCE variable=prod core=Mul_LUT",
    "VivadoAccelerator": "#pragma HLS RESOURCE variable=prod core=Mul_LUT",
}


def product_class_source(plan, node_name: str, index: int, fabric_pragma: str = "") -> str:
    """The live-weight table and the generated product class of one layer (for nnet_code_gen.h); each product
    bound to LUTs by `fabric_pragma` (`FABRIC_PRAGMAS`) where given."""
    text = _CLASS_HEAD.format(
        cls=PRODUCT_CLASS.format(index=index),
        table=LIVE_TABLE.format(index=index),
        fabric=f"\n        {fabric_pragma}" if fabric_pragma else "",
    )
    return live_table_source(plan, node_name, index) + layer_comment(plan, node_name) + text + _CLASS_TAIL
