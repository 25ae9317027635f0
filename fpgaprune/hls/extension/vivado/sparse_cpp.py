"""The C++ text of the kernel-sparse code: the generated product class of one layer, and the config templates.

Each layer gets a `static const` table of its live weights, `{input, output}` per live weight, and a product
class whose fully unrolled loop runs over that table: one product per live weight and nothing else. Each
output sums its bias and its own live products; an output with no live weight is its bias. HLS tools
constant-fold the unrolled loop into the same circuit as one statement per product, while g++ compiles a
loop, so the C-sim build costs what stock hls4ml's does whatever the number of weights. Comments beside
the table name every kernel by its index in the user's original layer. C-sim and synthesis read the same
code: there is no `#ifdef` around the arithmetic.
"""

PRODUCT_CLASS = "fpgaprune_sparse_dense_{index}"
LIVE_TABLE = "fpgaprune_live_{index}"

_CLASS_HEAD = """
// {layer} (hls4ml node {node}): {n_live} live weights of {n_weights}; {n_dead} of {n_out} outputs are constant
// (every kernel pruned)
template <class data_T, class res_T, typename CONFIG_T>
class {cls} : public DenseKernel<data_T, res_T, CONFIG_T> {{
  public:
    static typename CONFIG_T::accum_t mul(data_T x, typename CONFIG_T::weight_t w) {{
        #pragma HLS INLINE
        return static_cast<typename CONFIG_T::accum_t>(
            CONFIG_T::template product<data_T, typename CONFIG_T::weight_t>::product(x, w));
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


def _output_comment(plan, col: int) -> str:
    kept = plan.kept_kernels(col)
    name, co = plan.origin.layer, plan.origin.outputs[col]
    if plan.kind == "dense":
        what = f"{name}[:, {co}]: {len(kept)} of {plan.window[2]} inputs live"
    else:
        spatial = ":, " if plan.kind == "conv1d" else ":, :, "
        listed = ", ".join(str(c) for c in kept)
        what = f"{name}[{spatial}ci, {co}]: kernels kept for ci in {{{listed}}} ({len(kept)} of {plan.window[2]})"
    return (
        f"        // output {col} = {what}\n"
        if kept
        else (f"        // output {col} = {name}[..., {co}]: every kernel pruned, the constant bias\n")
    )


def live_table_source(plan, node_name: str, index: int) -> str:
    """`{input, output}` of each live weight, in the order of the weights array, with the kernels named."""
    index_type = "unsigned short" if max(plan.n_in, plan.n_out) <= 0xFFFF else "unsigned int"
    text = (
        f"\n// fpgaprune kernel-sparse product of {plan.origin.layer} (hls4ml node {node_name}): "
        f"live weight p multiplies input [p][0] into output [p][1]\n"
        f"static const {index_type} {LIVE_TABLE.format(index=index)}[{max(plan.n_live, 1)}][2] = {{\n"
    )
    position = 0
    for col in range(plan.n_out):
        text += _output_comment(plan, col)
        entries = []
        while position < plan.n_live and plan.cols[position] == col:
            entries.append(f"{{{int(plan.rows[position])}, {col}}}")
            position += 1
        for start in range(0, len(entries), 12):
            text += "        " + ", ".join(entries[start : start + 12]) + ",\n"
    if not plan.n_live:
        text += "        {0, 0}, // no live weight: the table is never read\n"
    return text + "};\n"


def product_class_source(plan, node_name: str, index: int) -> str:
    """The live-weight table and the generated product class of one layer (for nnet_code_gen.h)."""
    n_dead = sum(1 for col in range(plan.n_out) if not (plan.cols == col).any())
    text = _CLASS_HEAD.format(
        layer=plan.origin.layer,
        node=node_name,
        n_live=plan.n_live,
        n_weights=plan.n_in * plan.n_out,
        n_dead=n_dead,
        n_out=plan.n_out,
        cls=PRODUCT_CLASS.format(index=index),
        table=LIVE_TABLE.format(index=index),
    )
    return live_table_source(plan, node_name, index) + text + _CLASS_TAIL


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
    template<class data_T, class res_T, class CONFIG_T>
    using kernel = {namespace}::{product_class}<data_T, res_T, CONFIG_T>;
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

DENSE_CALL = "nnet::fpgaprune_sparse_dense<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
STREAM_CONV_CALL = (
    "nnet::fpgaprune_sparse_conv{dim}d_stream<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"
)
PARALLEL_CONV_CALL = "nnet::fpgaprune_sparse_conv_cl<{input_t}, {output_t}, {config}>({input}, {output}, {w}, {b});"

SPARSE_HEADER = "nnet_utils/nnet_fpgaprune_sparse.h"
